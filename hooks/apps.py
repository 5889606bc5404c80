from django.apps import AppConfig


class HooksConfig(AppConfig):
    name = "hooks"
    label = "hooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Hooks listen to the apps below them (comments, runs, secret scans, sharing); never the reverse.
        from hooks import errors, receivers  # noqa: F401  (the API's answers; the events heard)
