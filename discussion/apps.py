from django.apps import AppConfig


class DiscussionConfig(AppConfig):
    name = "discussion"
    label = "discussion"
    verbose_name = "Discussion"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The session search lists comment hits through a hook: sessions_app never imports this app.
        from discussion.queries import comment_hits
        from sessions_app.facade import register_extra_hits

        register_extra_hits("comments", comment_hits)
