from django.apps import AppConfig


class DiscussionConfig(AppConfig):
    name = "discussion"
    label = "discussion"
    verbose_name = "Discussion"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models import Exists, OuterRef

        from discussion.models import Comment
        from sessions_app.facade import SessionState, register_state

        # A thread nobody resolved: a root comment, not deleted, not resolved.
        register_state(
            SessionState(
                "open-threads",
                "open threads",
                lambda q: q.filter(
                    Exists(
                        Comment.objects.filter(
                            session=OuterRef("pk"),
                            parent__isnull=True,
                            resolved_at__isnull=True,
                            deleted_at__isnull=True,
                        )
                    )
                ),
            )
        )
        # The session search lists comment hits through a hook: sessions_app never imports this app.
        from discussion.queries import comment_hits
        from sessions_app.facade import register_extra_hits

        register_extra_hits("comments", comment_hits)
