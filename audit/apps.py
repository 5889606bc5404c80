from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    label = "audit"
    verbose_name = "Audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The audit listens to sessions_app and the agent; neither imports the audit.
        from agent.facade import signals as agent_signals
        from audit import omissions, session_filters, usage_rollup
        from sessions_app.facade import connect_entries_stored
        from sessions_app.facade import signals as session_signals

        connect_entries_stored(
            omissions.record_stored, dispatch_uid="piweb-audit-omissions", acts_on=omissions.ACTS_ON
        )
        connect_entries_stored(
            usage_rollup.record, dispatch_uid="piweb-audit-usage", acts_on=usage_rollup.ACTS_ON
        )
        # Sessions the previous release appended to during an upgrade (manage.py reconcile).
        session_signals.bookkeeping_checked.connect(
            usage_rollup.reconcile_session, dispatch_uid="piweb-audit-usage-reconcile"
        )
        agent_signals.attempts_omitted.connect(omissions.attempts_omitted, dispatch_uid="piweb-audit-omitted")
        agent_signals.run_closed.connect(omissions.run_closed, dispatch_uid="piweb-audit-run-closed")
        # The session list filters by model, provider and cost from the usage rows kept here.
        session_filters.register()
