"""Admin pages: the compaction history, and summarizer providers with write-only keys."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from compaction_app.models import CompactionRun
from pitree.messages import content_text
from sessions_app.facade import Entry, LiveSessionRowsAdmin, path_rows

# Enough to check a summary against its source; the full range stays available through the API.
REPLACED_ROWS_SHOWN = 200
PREVIEW_CHARS = 160


def _url(name: str, *args: Any) -> str | None:
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def _preview(row: Entry) -> str:
    payload = row.payload()
    if not isinstance(payload, dict):
        return ""
    message = payload.get("message")
    if isinstance(message, dict):
        text = content_text(message.get("content"), " ")
    else:
        text = payload.get("summary") or payload.get("content") or ""
        text = text if isinstance(text, str) else content_text(text, " ")
    text = " ".join(text.split())
    return text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")


@admin.register(CompactionRun)
class CompactionRunAdmin(LiveSessionRowsAdmin):
    list_display = [
        "operation_id",
        "kind",
        "reason",
        "status",
        "session_link",
        "model",
        "tokens_before",
        "tokens_after",
        "duration_ms",
        "cost",
        "created_at",
    ]
    list_filter = ["status", "kind", "reason", "model"]
    search_fields = ["session__name", "session__pi_id", "=operation_id"]
    list_select_related = ["session"]
    date_hierarchy = "created_at"
    exclude = ["idempotency_key"]
    fieldsets = [
        (None, {"fields": ["operation_id", "kind", "reason", "status", "session_link", "requested_by"]}),
        (
            "Plan",
            {
                "fields": [
                    "planned_leaf",
                    "target_id",
                    "label",
                    "first_kept_entry_id",
                    "replaced_range",
                    "custom_instructions",
                    "replace_instructions",
                    "will_retry",
                ]
            },
        ),
        (
            "Result",
            {
                "fields": [
                    "result_entry_link",
                    "result_leaf_id",
                    "editor_text",
                    "tokens_before",
                    "tokens_after",
                    "summarizer",
                    "model",
                    "usage",
                    "cost",
                    "error",
                ]
            },
        ),
        ("Timing", {"fields": ["created_at", "started_at", "finished_at", "duration_ms", "attempts"]}),
        ("Summary and the entries it replaced", {"fields": ["summary_and_source"]}),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: CompactionRun | None = None) -> bool:
        return False  # history is written by the runs themselves

    def get_readonly_fields(self, request: HttpRequest, obj: CompactionRun | None = None) -> list[str]:
        return [str(f) for fieldset in self.fieldsets or () for f in fieldset[1]["fields"]]

    @admin.display(description="Session", ordering="session")
    def session_link(self, run: CompactionRun) -> SafeString | str:
        url = _url("admin:sessions_app_chatsession_change", run.session_id) or _url(
            "sessions_api:session-detail", run.session_id
        )
        return format_html('<a href="{}">{}</a>', url, run.session) if url else str(run.session)

    @admin.display(description="Result entry")
    def result_entry_link(self, run: CompactionRun) -> SafeString | str:
        return self._entry_link(run, run.result_entry_id) if run.result_entry_id else "—"

    @admin.display(description="Replaced entries (append seq)")
    def replaced_range(self, run: CompactionRun) -> str:
        if run.replaced_first_seq is None:
            return "—"
        return f"{run.replaced_first_seq} … {run.replaced_last_seq}"

    def _entry_link(self, run: CompactionRun, entry_id: str | None) -> SafeString | str:
        url = _url("sessions_api:entry-detail", run.session_id, entry_id) if entry_id else None
        return format_html('<a href="{}">{}</a>', url, entry_id) if url else (entry_id or "")

    @admin.display(description="")
    def summary_and_source(self, run: CompactionRun) -> SafeString:
        rows = self._replaced_rows(run)
        shown = rows[:REPLACED_ROWS_SHOWN]
        table = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (row.seq, self._entry_link(run, row.entry_id), row.role or row.type, _preview(row))
                for row in shown
            ),
        )
        more = f"… and {len(rows) - len(shown)} more" if len(rows) > len(shown) else ""
        return format_html(
            '<div style="display:flex;gap:1.5em;align-items:flex-start">'
            '<div style="flex:1"><h3>Summary</h3><pre style="white-space:pre-wrap">{}</pre></div>'
            '<div style="flex:1"><h3>Replaced entries ({})</h3>'
            "<table><thead><tr><th>seq</th><th>id</th><th>kind</th><th>text</th></tr></thead>"
            "<tbody>{}</tbody></table><p>{}</p></div></div>",
            run.summary or "—",
            len(rows),
            table,
            more,
        )

    def _replaced_rows(self, run: CompactionRun) -> list[Entry]:
        """Return the path entries from the first replaced one to the last, in path order."""
        if run.replaced_first_seq is None or run.replaced_last_seq is None:
            return []
        ends = {
            row.seq: row
            for row in Entry.objects.filter(
                session_id=run.session_id, seq__in=[run.replaced_first_seq, run.replaced_last_seq]
            )
        }
        first, last = ends.get(run.replaced_first_seq), ends.get(run.replaced_last_seq)
        if first is None or last is None or first.depth is None:
            return []
        return path_rows(run.session, last, min_depth=first.depth)
