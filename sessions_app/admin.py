"""Admin pages for sessions, entries, teams and shares, and the read-only action log."""

from __future__ import annotations

import csv
import itertools
import json
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString

from sessions_app import services
from sessions_app.models import (
    ActionLog,
    ApiToken,
    ChatSession,
    Entry,
    SessionShare,
    ShareLink,
    Team,
    TeamMembership,
)

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


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "members", "created_at"]
    search_fields = ["name", "memberships__user__username"]
    inlines = [TeamMembershipInline]

    @admin.display(description="members")
    def members(self, team: Team) -> int:
        return team.memberships.count()

    # Staff edits of teams are logged as the members' own changes are, with the staff member as actor.
    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change:
                services.record_action(
                    actor=request.user,
                    action=services.Action.TEAM_CREATE,
                    session=None,
                    team=obj,
                    by_staff=True,
                )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_formset(request, form, formset, change)
            if formset.model is not TeamMembership:
                return
            changes = [
                *((services.Action.TEAM_ACCEPT, m) for m in formset.new_objects),
                *((services.Action.TEAM_ROLE, m) for m, _ in formset.changed_objects),
                *((services.Action.TEAM_REMOVE, m) for m in formset.deleted_objects),
            ]
            for action, membership in changes:
                services.record_action(
                    actor=request.user,
                    action=action,
                    session=None,
                    team=form.instance,
                    username=membership.user.get_username(),
                    role=membership.role,
                    by_staff=True,
                )


@admin.register(SessionShare)
class SessionShareAdmin(LiveSessionRowsAdmin):
    list_display = ["session", "team", "access", "created_by", "created_at"]
    list_filter = ["access", "team"]
    search_fields = ["session__name", "session__pi_id", "team__name"]
    list_select_related = ["session", "team", "created_by"]
    raw_id_fields = ["session", "created_by"]
    readonly_fields = ["created_at"]


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
    readonly_fields = [
        "short_token",
        "session",
        "scope",
        "entry_id",
        "frozen_seq",
        "created_by",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # links are minted by their owners so the token is shown once, to them

    @admin.display(description="token")
    def short_token(self, link: ShareLink) -> str:
        # Only the hash and this prefix are stored: the admin cannot show a usable link either.
        return link.token_prefix + "…" if link.token_prefix else "—"

    @admin.display(description="state")
    def link_state(self, link: ShareLink) -> str:
        return f"{link.state()} · {'frozen' if link.frozen_seq is not None else 'live'}"


class InputFilter(admin.SimpleListFilter):
    """A filter typed into a box (a session, a time) instead of picked from a list that could be huge."""

    template = "admin/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("", "")]  # Django shows a filter only if it has choices; the template ignores them

    def choices(self, changelist: Any) -> Any:
        # The other filters' parameters, kept as hidden fields of this filter's form.
        query = {k: v for k, v in changelist.get_filters_params().items() if k != self.parameter_name}
        yield {"query": query, "value": self.value() or "", "parameter": self.parameter_name}


class SessionFilter(InputFilter):
    title = "session (id or Pi id)"
    parameter_name = "session"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        # A purged session's rows keep its id and its label; live ones keep the link too.
        match = Q(session__pi_id=value) | Q(session_label=value)
        if value.isdigit():
            match |= Q(session_number=int(value))
        return queryset.filter(match)


class _TimeFilter(InputFilter):
    lookup = "gte"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        moment = parse_datetime(value) or _midnight(value)
        if moment is None:
            raise IncorrectLookupParameters(f"{self.title}: give a date (2026-12-01) or a time")
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        return queryset.filter(**{f"created_at__{self.lookup}": moment})


def _midnight(value: str) -> datetime | None:
    day = parse_date(value)
    return datetime(day.year, day.month, day.day) if day is not None else None


class SinceFilter(_TimeFilter):
    title = "from (date or time)"
    parameter_name = "since"


class UntilFilter(_TimeFilter):
    title = "before (date or time)"
    parameter_name = "until"
    lookup = "lt"


CSV_COLUMNS = [
    "time",
    "action",
    "actor_kind",
    "actor",
    "actor_id",
    "session_id",
    "session",
    "team_id",
    "team",
    "detail",
]


class _Echo:
    def write(self, value: str) -> str:
        return value


@admin.register(ActionLog)
class ActionLogAdmin(admin.ModelAdmin):
    change_list_template = "admin/sessions_app/actionlog/change_list.html"
    list_display = ["created_at", "who", "action", "session_link", "team_label", "detail"]
    list_filter = [
        "action",
        "actor_kind",
        ("actor", admin.RelatedOnlyFieldListFilter),
        ("team", admin.RelatedOnlyFieldListFilter),
        SessionFilter,
        SinceFilter,
        UntilFilter,
        "created_at",
    ]
    search_fields = ["session_label", "session__name", "session__pi_id", "actor_name", "team_label"]
    list_select_related = ["actor", "session"]
    date_hierarchy = "created_at"
    fields = [
        "created_at",
        "actor",
        "actor_kind",
        "actor_name",
        "action",
        "session_link",
        "session_label",
        "session_number",
        "team",
        "team_label",
        "detail",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        csv_view = self.admin_site.admin_view(self.csv_view)
        return [path("csv/", csv_view, name="sessions_app_actionlog_csv"), *super().get_urls()]

    def csv_view(self, request: HttpRequest) -> HttpResponse:
        """Download the rows the changelist shows with the same filters and search, as CSV, streamed."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        rows = self.get_changelist_instance(request).get_queryset(request)
        writer = csv.writer(_Echo())
        lines = itertools.chain(
            [writer.writerow(CSV_COLUMNS)],
            (writer.writerow(_csv_row(row)) for row in rows.iterator(chunk_size=2000)),
        )
        response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = content_disposition_header(
            as_attachment=True, filename="action-log.csv"
        )
        return response

    @admin.display(description="actor", ordering="actor_name")
    def who(self, row: ActionLog) -> str:
        name = row.actor_name or (str(row.actor) if row.actor_id else "—")
        return name if row.actor_kind == ActionLog.ActorKind.USER else f"{name} ({row.actor_kind})"

    @admin.display(description="session", ordering="session_label")
    def session_link(self, row: ActionLog) -> SafeString | str:
        if row.session_id is None or row.session.deleted_at is not None:
            return row.session_label or "—"  # a deleted session: its label, no link
        return format_html(
            '<a href="{}">{}</a>', _session_page(row.session_id), row.session_label or row.session
        )


def _csv_row(row: ActionLog) -> list[Any]:
    # Spreadsheets run cells that start with these as formulas: the text a user chose is quoted.
    def cell(text: str) -> str:
        return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text

    return [
        row.created_at.isoformat(),
        row.action,
        row.actor_kind,
        cell(row.actor_name),
        row.actor_id or "",
        row.session_number or "",
        cell(row.session_label),
        row.team_id or "",
        cell(row.team_label),
        json.dumps(row.detail, ensure_ascii=False, sort_keys=True),
    ]


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

    list_display = ("token_key", "name", "user", "created", "expiry")
    search_fields = ("token_key", "name", "user__username")
    list_select_related = ("user",)
    fields = ("token_key", "name", "user", "created", "expiry")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: ApiToken) -> None:
        # Through the use case, so the revocation is in the action log under the staff member.
        services.revoke_api_token(actor=request.user, user=obj.user, token_key=obj.token_key, as_staff=True)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset.select_related("user"):
            self.delete_model(request, token)
