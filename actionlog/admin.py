"""The action log's admin page: read-only, filtered by typed values, exported as CSV."""

from __future__ import annotations

import csv
import itertools
import json
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString

from actionlog.models import ActionLog
from actionlog.verbs import declared_verbs, spoken


class InputFilter(admin.SimpleListFilter):
    """A filter typed into a box (a session, a time) instead of picked from a list that could be huge."""

    template = "admin/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("", "")]  # Django shows a filter only if it has choices; the template ignores them

    def choices(self, changelist: Any) -> Any:
        # The other filters' parameters, kept as hidden fields of this filter's form.
        query = {k: v for k, v in changelist.get_filters_params().items() if k != self.parameter_name}
        yield {"query": query, "value": self.value() or "", "parameter": self.parameter_name}


class ActionFilter(admin.SimpleListFilter):
    """The action filter, offering each verb as people read it."""

    title = "action"
    parameter_name = "action"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return sorted(((verb, spoken(verb)) for verb in declared_verbs()), key=lambda pair: pair[1])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(action=value) if value else queryset


def _said(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_said(item) for item in value)
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


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
    change_list_template = "admin/actionlog/actionlog/change_list.html"
    list_display = ["created_at", "who", "what", "session_link", "team_label", "details"]
    list_filter = [
        ActionFilter,
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
    readonly_fields = fields  # type: ignore[assignment]  # names only, which the base type allows

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[Any]:
        csv_view = self.admin_site.admin_view(self.csv_view)
        return [path("csv/", csv_view, name="actionlog_actionlog_csv"), *super().get_urls()]

    def csv_view(self, request: HttpRequest) -> StreamingHttpResponse:
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

    @admin.display(description="action", ordering="action")
    def what(self, row: ActionLog) -> str:
        return spoken(row.action)

    @admin.display(description="detail")
    def details(self, row: ActionLog) -> str:
        # Read as "key: value; …" rather than JSON; the row's own page keeps the JSON as stored.
        detail = row.detail if isinstance(row.detail, dict) else {}
        return "; ".join(f"{key}: {_said(value)}" for key, value in detail.items()) or "—"

    @admin.display(description="actor", ordering="actor_name")
    def who(self, row: ActionLog) -> str:
        name = row.actor_name or (str(row.actor) if row.actor_id else "—")
        return name if row.actor_kind == ActionLog.ActorKind.USER else f"{name} ({row.actor_kind})"

    @admin.display(description="session", ordering="session_label")
    def session_link(self, row: ActionLog) -> SafeString | str:
        if row.session is None or row.session.deleted_at is not None:
            return row.session_label or "—"  # a deleted session: its label, no link
        # A live session is named as people know it now: its name, else its first prompt.
        return format_html('<a href="{}">{}</a>', _session_page(row.session.pk), row.session.title)


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


def _session_page(session_id: int) -> str:
    return reverse("sessions:detail", args=[session_id])
