"""Users and API tokens in the admin: deletions and revocations go through their use cases."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import Sum
from django.http import HttpRequest

from accounts_app import api_tokens
from sessions_app.facade import ApiToken, ChatSession, DeletesThroughUseCase, services

User = get_user_model()


class PiwebUserAdmin(DeletesThroughUseCase, UserAdmin):
    """Deleting users deletes their sessions as their owner would, then the users.

    Django's own confirmation page would load every entry of every session to list it, and its cascade
    would delete them all in one statement inside the request's transaction.
    """

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        users = list(objs)
        owned = ChatSession.objects.filter(owner__in=users)
        entries = owned.aggregate(total=Sum("entry_count"))["total"] or 0
        sessions = owned.count()
        counts = {"users": len(users), "sessions": sessions, "entries (purged first)": entries}
        # As Django's own page would: their sessions go too, so that takes the right to delete sessions.
        perms_needed = set()
        if sessions and not request.user.has_perm(f"{ChatSession._meta.app_label}.delete_chatsession"):
            perms_needed.add(str(ChatSession._meta.verbose_name))
        return [str(u) for u in users], counts, perms_needed, []

    def delete_one(self, request: HttpRequest, obj: Any) -> None:
        services.delete_owner(owner=obj, actor=request.user)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, PiwebUserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens by name, owner and expiry; staff revoke one by deleting it (its sockets close too).

    Only hashes are stored, so there is nothing to show or edit; tokens are made by their owners.
    """

    # The short id, as its owner's list shows it; the stored key is longer than any list needs.
    list_display = ("token_id", "name", "user", "created", "expiry")
    search_fields = ("token_key", "name", "user__username")
    list_select_related = ("user",)
    fields = ("token_id", "name", "user", "created", "expiry")
    readonly_fields = fields

    @admin.display(description="token")
    def token_id(self, obj: ApiToken) -> str:
        return f"{obj.public_id}…"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: ApiToken) -> None:
        # Through the use case, so the revocation is in the action log under the staff member.
        api_tokens.revoke_api_token(actor=request.user, user=obj.user, token_id=obj.token_key, as_staff=True)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset.select_related("user"):
            self.delete_model(request, token)
