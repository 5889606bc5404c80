"""Admin views of discussions: every comment, deleted ones included with their text (the tombstones)."""

from __future__ import annotations

from django.contrib import admin

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
    list_display = ("team", "viewers_may_comment")


admin.site.register(Notification)
admin.site.register(NotificationPreference)
