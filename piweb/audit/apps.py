from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "piweb.audit"
    label = "audit"
    verbose_name = "Audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The audit listens to sessions_app; sessions_app never imports the audit.
        from sessions_app.signals import entries_stored

        from . import usage_rollup
        from .omissions import record_stored

        entries_stored.connect(record_stored, dispatch_uid="piweb-audit-omissions")
        entries_stored.connect(usage_rollup.record, dispatch_uid="piweb-audit-usage")
