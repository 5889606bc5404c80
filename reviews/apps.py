from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    label = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The session list's filter and badge, the session page's part, and the outdated mark, all through
        # hooks of sessions_app, which never imports this app.
        from reviews import receivers  # noqa: F401
        from reviews.parts import register

        register()
