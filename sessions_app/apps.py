from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Pi sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import signals  # noqa: F401  (connects the receivers)
        from sessions_app.api import errors  # noqa: F401  (registers the API's answers to refusals)
