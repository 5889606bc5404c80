"""Admin audit pages: omitted failed attempts and usage rollups (staff only, read-only)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit.models import OmittedAttempt, UsageRollup
from audit.usage import compute_rollup
from compaction_app.facade import CompactionRun
from core.staff import ReadOnlyAdmin

ERROR_CHARS = 160


def tree_url(session_id: int, entry_id: str) -> str:
    """Return the session page scrolled to ``entry_id``."""
    return reverse("sessions:detail", args=[session_id]) + f"#entry={entry_id}"


@admin.register(OmittedAttempt)
class OmittedAttemptAdmin(ReadOnlyAdmin):
    list_display = [
        "omitted_at",
        "why",
        "retry",
        "failed_entry",
        "short_error",
        "model_name",
        "session_link",
        "compaction",
    ]
    list_filter = ["why", "retry_succeeded", "provider", "model", "stop_reason", "omitted_at"]
    search_fields = ["error", "target_entry_id", "edit_entry_id", "session__name", "owner__username"]
    list_select_related = ["session", "owner", "requested_by", "run"]
    date_hierarchy = "omitted_at"
    list_per_page = 50
    fields = [
        "omitted_at",
        "why",
        "retry_succeeded",
        "failed_entry",
        "edit_entry_id",
        "target_role",
        "stop_reason",
        "error",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cost",
        "session_link",
        "owner",
        "requested_by",
        "run",
        "compaction",
    ]
    readonly_fields = fields  # type: ignore[assignment]  # names only, which the base type allows

    def get_queryset(self, request: HttpRequest) -> QuerySet[OmittedAttempt]:
        return super().get_queryset(request).filter(omits=True, session__deleted_at__isnull=True)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # The table is wide; the page is more useful without the app sidebar.
        return super().changelist_view(request, {"is_nav_sidebar_enabled": False, **(extra_context or {})})

    @admin.display(description="retry succeeded", boolean=True, ordering="retry_succeeded")
    def retry(self, row: OmittedAttempt) -> bool | None:
        return row.retry_succeeded

    @admin.display(description="omitted entry", ordering="target_entry_id")
    def failed_entry(self, row: OmittedAttempt) -> SafeString:
        return format_html(
            '<a href="{}">{}</a><br><small>{}{}</small>',
            tree_url(row.session_id, row.target_entry_id),
            row.target_entry_id,
            row.target_role or "?",
            f", stop: {row.stop_reason}" if row.stop_reason else "",
        )

    @admin.display(description="error")
    def short_error(self, row: OmittedAttempt) -> SafeString:
        text = " ".join(row.error.split())
        text = text[:ERROR_CHARS] + ("…" if len(text) > ERROR_CHARS else "")
        return format_html('<span style="display:inline-block;min-width:16em">{}</span>', text or "—")

    @admin.display(description="provider/model, tokens", ordering="model")
    def model_name(self, row: OmittedAttempt) -> SafeString:
        name = "/".join(part for part in (row.provider, row.model) if part) or "—"
        if row.input_tokens is None and row.output_tokens is None:
            return format_html("{}", name)
        tokens = f"{row.input_tokens or 0} in, {row.output_tokens or 0} out"
        return format_html("{}<br><small>{}</small>", name, tokens)

    @admin.display(description="session / user", ordering="session")
    def session_link(self, row: OmittedAttempt) -> SafeString:
        who = row.owner.username if row.owner else "—"
        if row.requested_by and row.requested_by != row.owner:
            who += f" (run by {row.requested_by.username})"
        url = tree_url(row.session_id, row.edit_entry_id)
        return format_html('<a href="{}">{}</a><br><small>{}</small>', url, row.session, who)

    @admin.display(description="compaction")
    def compaction(self, row: OmittedAttempt) -> SafeString | str:
        """Link the compaction that followed an overflow omission, if the run recorded one."""
        reference = None
        for event in (row.run.recovery_events if row.run else None) or []:
            if isinstance(event, dict) and row.edit_entry_id in (event.get("omitted") or []):
                reference = event.get("compaction")
        if not reference:
            return "—"
        # A successful recovery recorded the compaction entry id, a failed one the operation id.
        runs = CompactionRun.objects.filter(session_id=row.session_id)
        try:
            runs = runs.filter(operation_id=uuid.UUID(str(reference)))
        except ValueError:
            runs = runs.filter(result_entry_id=reference)
        run = runs.only("pk", "status").first()
        if run is None:
            return str(reference)
        url = reverse("admin:compaction_app_compactionrun_change", args=[run.pk])
        return format_html('<a href="{}">{}</a>', url, run.status)


@admin.register(UsageRollup)
class UsageRollupAdmin(ReadOnlyAdmin):
    """The changelist is replaced by the rollup tables."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        rollup = compute_rollup()
        context = {
            **self.admin_site.each_context(request),
            "title": "Usage rollups",
            "opts": self.model._meta,
            "rollup": rollup,
            "tables": [
                ("Per user", rollup.by_user),
                ("Per team", rollup.by_team),
                ("Per model", rollup.by_model),
            ],
            **(extra_context or {}),
        }
        return TemplateResponse(request, "audit/usage.html", context)
