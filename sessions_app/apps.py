from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Pi sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import signals  # noqa: F401  (connects the receivers)

        # Registers the API token scheme with the OpenAPI generator.
        from sessions_app.api import schema_auth  # noqa: F401
