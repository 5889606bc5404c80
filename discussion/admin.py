"""Admin views of discussions: every comment, deleted ones included with their text (the tombstones)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from discussion import services
from discussion.models import Comment, Notification, NotificationPreference, TeamDiscussion


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ("id", "session", "entry_id", "author_name", "created_at", "deleted_at", "resolved_at")
    list_filter = ("deleted_at", "resolved_at")
    search_fields = ("body", "author_name", "entry_id")
    raw_id_fields = ("session", "parent", "author")
    # Comments change only through their use cases (logged); the admin reads them.
    readonly_fields = [f.name for f in Comment._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(TeamDiscussion)
class TeamDiscussionAdmin(admin.ModelAdmin):
    """The team owners' setting, changed by staff through the same use case (logged ``by_staff``)."""

    list_display = ("team", "viewers_may_comment")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["team"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: TeamDiscussion, form: Any, change: bool) -> None:
        services.set_viewers_may_comment(
            actor=request.user, team_id=obj.team_id, allowed=obj.viewers_may_comment, as_staff=True
        )
        obj.pk = TeamDiscussion.objects.get(team_id=obj.team_id).pk

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # no row means the default (viewers may comment); set it instead


admin.site.register(Notification)
admin.site.register(NotificationPreference)
