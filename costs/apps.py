from django.apps import AppConfig


class CostsConfig(AppConfig):
    name = "costs"
    label = "costs"
    verbose_name = "Costs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Costs listen to sessions_app's entry store; sessions_app never imports them.
        from costs import queries, recording
        from sessions_app.facade import connect_entries_stored, signals

        connect_entries_stored(recording.record, dispatch_uid="piweb-costs", acts_on=recording.ACTS_ON)
        # The Markdown and HTML exports show each answer's cost as the session page does.
        signals.costs_wanted.connect(queries.export_costs, dispatch_uid="piweb-costs-export")
        # Sessions the previous release appended to during an upgrade (manage.py reconcile).
        signals.bookkeeping_checked.connect(recording.reconcile_session, dispatch_uid="piweb-costs-reconcile")
