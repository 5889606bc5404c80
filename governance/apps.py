from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "governance"
    label = "governance"
    verbose_name = "Governance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Governance listens to sessions_app (stored entries, sharing, link opens); never the reverse.
        from governance import receivers  # noqa: F401
