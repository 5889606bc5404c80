from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "governance"
    label = "governance"
    verbose_name = "Governance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models import Exists, OuterRef

        from governance.models import SecretFinding
        from sessions_app.facade import SessionState, register_state

        # Secrets found and still in the session (not redacted yet).
        register_state(
            SessionState(
                "secrets",
                "secrets flagged",
                lambda q: q.filter(
                    Exists(SecretFinding.objects.filter(session=OuterRef("pk"), redacted_at__isnull=True))
                ),
            )
        )
        # Governance listens to sessions_app (stored entries, sharing, link opens); never the reverse.
        from governance import receivers  # noqa: F401
