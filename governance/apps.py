from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "governance"
    label = "governance"
    verbose_name = "Governance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Governance listens to sessions_app (stored entries, sharing, link opens); never the reverse.
        from django.db.models import Exists, OuterRef

        from governance import receivers  # noqa: F401
        from governance.models import SecretFinding
        from sessions_app.facade import register_state

        # The session list's ``state=secrets``: secrets flagged and not redacted yet (a partial index).
        register_state(
            "secrets",
            "Secrets flagged",
            lambda q, viewer: q.filter(
                Exists(SecretFinding.objects.filter(session=OuterRef("pk"), redacted_at__isnull=True))
            ),
            order=50,
        )
