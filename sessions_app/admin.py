"""Admin pages for sessions, entries, shares and share links: every change goes through its use case."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from sessions_app import services
from sessions_app.models import ChatSession, Entry, SessionShare, ShareLink

RAW_PREVIEW_CHARS = 120


class LiveSessionRowsAdmin(admin.ModelAdmin):
    """Rows of deleted sessions are gone from these pages at once, though the purge deletes them later."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(session__deleted_at__isnull=True)


def _session_page(session_id: int, entry_id: str | None = None) -> str:
    url = reverse("sessions:detail", args=[session_id])
    return f"{url}#entry={entry_id}" if entry_id else url


class DeletesThroughUseCase(admin.ModelAdmin):
    """Deletes from the change page and from "Delete selected" go one object at a time through the use case
    (``delete_one``), never through Django's cascade."""

    def delete_one(self, request: HttpRequest, obj: Any) -> None:
        raise NotImplementedError

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_one(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_one(request, obj)


@admin.register(ChatSession)
class ChatSessionAdmin(DeletesThroughUseCase):
    list_display = ["id", "name", "pi_id", "owner", "entry_count", "message_count", "updated_at", "page"]
    list_filter = ["updated_at"]
    search_fields = ["name", "pi_id", "cwd", "owner__username"]
    list_select_related = ["owner"]
    readonly_fields = [
        "pi_id",
        "header_raw",
        "version",
        "leaf_entry_id",
        "leaf_seq",
        "next_seq",
        "next_segment",
        "entry_count",
        "message_count",
        "stored_bytes",
        "forked_from",
        "forked_from_entry",
        "forked_by",
        "created_at",
        "updated_at",
        "page",
    ]
    raw_id_fields = ["owner", "forked_from", "forked_by"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions come from imports and the app, which keep the tree facts consistent

    @admin.display(description="tree")
    def page(self, session: ChatSession) -> SafeString:
        return format_html('<a href="{}">open</a>', _session_page(session.pk))

    # Deleting here is the same use case as the owner's Delete: the session is hidden at once and its
    # rows are purged in batches by a worker. Django's own cascade would delete every entry in the
    # request, and its confirmation page would first load each one to list it.
    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        sessions = list(objs)
        entries = sum(s.entry_count for s in sessions)
        counts = {"sessions": len(sessions), "entries (purged in the background)": entries}
        return [str(s) for s in sessions], counts, set(), []

    def delete_one(self, request: HttpRequest, obj: ChatSession) -> None:
        services.delete_session(session=obj, actor=request.user, as_staff=True)


@admin.register(Entry)
class EntryAdmin(LiveSessionRowsAdmin):
    list_display = [
        "session",
        "seq",
        "entry_id",
        "parent_id",
        "type",
        "role",
        "timestamp",
        "author",
        "preview",
    ]
    list_filter = ["type", "role", "author__kind"]
    search_fields = ["=entry_id", "=session__pi_id", "session__name"]
    list_select_related = ["session", "author"]
    show_full_result_count = False  # counting every entry is the slow part of this page

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # entries are append-only

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="raw")
    def preview(self, entry: Entry) -> SafeString:
        text = entry.raw[:RAW_PREVIEW_CHARS] + ("…" if len(entry.raw) > RAW_PREVIEW_CHARS else "")
        return format_html(
            '<a href="{}"><code>{}</code></a>', _session_page(entry.session_id, entry.entry_id), text
        )


@admin.register(SessionShare)
class SessionShareAdmin(DeletesThroughUseCase, LiveSessionRowsAdmin):
    """Shares made or changed here are the owner's share use case run by staff: the team's sharing policy
    applies, live views re-check access, and the action log says ``by_staff``."""

    list_display = ["session", "team", "access", "created_by", "created_at"]
    list_filter = ["access", "team"]
    search_fields = ["session__name", "session__pi_id", "team__name"]
    list_select_related = ["session", "team", "created_by"]
    raw_id_fields = ["session"]
    fields = ["session", "team", "access", "created_by", "created_at"]
    readonly_fields = ["created_by", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A share is one session with one team: changing either is a new share, not an edit.
        return [*self.readonly_fields, *(["session", "team"] if obj is not None else [])]

    def save_model(self, request: HttpRequest, obj: SessionShare, form: Any, change: bool) -> None:
        saved = services.share_with_team(
            session=obj.session, team=obj.team, access=obj.access, actor=request.user, as_staff=True
        )
        obj.pk, obj.created_by = saved.pk, saved.created_by

    def delete_one(self, request: HttpRequest, obj: SessionShare) -> None:
        services.unshare_with_team(session=obj.session, team=obj.team, actor=request.user, as_staff=True)


@admin.register(ShareLink)
class ShareLinkAdmin(LiveSessionRowsAdmin):
    list_display = [
        "short_token",
        "session",
        "scope",
        "link_state",
        "entry_id",
        "frozen_seq",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["scope", "revoked_at", "expires_at"]
    search_fields = ["session__name", "session__pi_id"]
    list_select_related = ["session"]
    fields = [
        "short_token",
        "session",
        "scope",
        "entry_id",
        "frozen_seq",
        "expires_at",
        "revoked_at",
        "created_by",
        "created_at",
    ]

    actions = ["revoke_links"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # links are minted by their owners so the token is shown once, to them

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # "Revoke" (the owner's use case, logged) is the one change staff make

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("sessions_app.change_sharelink")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a revoked link stays, so the log and the page can still say what it was

    @admin.action(description="Revoke the selected links", permissions=["revoke"])
    def revoke_links(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> None:
        links = list(queryset.select_related("session").filter(revoked_at__isnull=True))
        for link in links:
            services.revoke_share_link(link=link, actor=request.user, as_staff=True)
        self.message_user(request, f"{len(links)} link(s) revoked.", messages.SUCCESS)

    @admin.display(description="token")
    def short_token(self, link: ShareLink) -> str:
        # Only the hash and this prefix are stored: the admin cannot show a usable link either.
        return link.token_prefix + "…" if link.token_prefix else "—"

    @admin.display(description="state")
    def link_state(self, link: ShareLink) -> str:
        return f"{link.state()} · {'frozen' if link.frozen_seq is not None else 'live'}"
