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

        from django.db.models import Exists, OuterRef

        from discussion.models import Comment
        from sessions_app.facade import register_state

        # The session list's ``state=open-threads``: an unresolved thread (found by comment_entry_idx).
        register_state(
            "open-threads",
            "Open threads",
            lambda q, viewer: q.filter(
                Exists(
                    Comment.objects.filter(
                        session=OuterRef("pk"),
                        parent__isnull=True,
                        resolved_at__isnull=True,
                        deleted_at__isnull=True,
                    )
                )
            ),
            order=40,
        )
