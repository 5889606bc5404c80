from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "piweb.audit"
    label = "audit"
    verbose_name = "Audit"
    default_auto_field = "django.db.models.BigAutoField"
