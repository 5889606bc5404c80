from django.apps import AppConfig


class ActivityConfig(AppConfig):
    name = "activity"
    label = "activity"
    verbose_name = "Team activity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The rollup listens to the apps below it, none of which imports this one. Connected after costs
        # (INSTALLED_APPS order), so a batch's day totals are stored when its cost is read here.
        from django.db.models.signals import post_save

        from actionlog.facade import ActionLog
        from activity import rollup
        from agent.facade import AgentRun
        from agent.facade import signals as agent_signals
        from sessions_app.facade import connect_entries_stored, signals

        connect_entries_stored(rollup.entries_stored, dispatch_uid="piweb-activity", acts_on=rollup.ACTS_ON)
        agent_signals.run_closed.connect(rollup.run_closed, dispatch_uid="piweb-activity-run-closed")
        post_save.connect(rollup.run_saved, sender=AgentRun, dispatch_uid="piweb-activity-run-saved")
        post_save.connect(rollup.action_logged, sender=ActionLog, dispatch_uid="piweb-activity-reviews")
        signals.bookkeeping_checked.connect(rollup.reconcile_session, dispatch_uid="piweb-activity-reconcile")
