"""Staff pages: secrets found (redact from the list), legal holds, retention rules and their dry run,
and share-link opens. Every change goes through the use case, so it is logged under the staff member."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone

from core.staff import ReadOnlyAdmin as ReadOnly
from governance import redaction, retention
from governance.models import LegalHold, LinkView, SecretFinding, TeamPolicy, UserRetention
from sessions_app.facade import ChatSession


@admin.register(SecretFinding)
class SecretFindingAdmin(ReadOnly):
    list_display = ["found_at", "session", "entry_id", "kind", "path", "start", "end", "redacted_at"]
    list_filter = ["kind", ("redacted_at", admin.EmptyFieldListFilter), "found_at"]
    list_select_related = ["session", "redacted_by"]
    search_fields = ["entry_id", "session__name"]
    actions = ["redact"]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_staff)

    @admin.action(description="Redact the selected secrets")
    def redact(self, request: HttpRequest, queryset: QuerySet[SecretFinding]) -> None:
        done = 0
        by_session: dict[int, list[int]] = {}
        for session_id, pk in queryset.values_list("session_id", "pk"):
            by_session.setdefault(session_id, []).append(pk)
        for session_id, ids in by_session.items():
            session = ChatSession.objects.filter(pk=session_id).first()
            if session is not None:
                done += len(redaction.redact_findings(actor=request.user, session=session, finding_ids=ids))
        self.message_user(request, f"{done} secret(s) redacted.", messages.SUCCESS)


@admin.register(LegalHold)
class LegalHoldAdmin(admin.ModelAdmin):
    list_display = ["session", "reason", "placed_by", "placed_at"]
    raw_id_fields = ["session"]
    fields = ["session", "reason"]
    change_list_template = "governance/legalhold_changelist.html"

    def save_model(self, request: HttpRequest, obj: LegalHold, form: Any, change: bool) -> None:
        hold = retention.place_hold(actor=request.user, session=obj.session, reason=obj.reason)
        obj.pk, obj.placed_by, obj.placed_at = hold.pk, hold.placed_by, hold.placed_at

    def delete_model(self, request: HttpRequest, obj: LegalHold) -> None:
        retention.lift_hold(actor=request.user, session=obj.session)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[LegalHold]) -> None:
        for hold in queryset.select_related("session"):
            retention.lift_hold(actor=request.user, session=hold.session)

    def get_urls(self) -> list[URLPattern]:
        dry_run = path(
            "retention-dry-run/",
            self.admin_site.admin_view(self.dry_run_view),
            name="governance_retention_dry_run",
        )
        return [dry_run, *super().get_urls()]

    def dry_run_view(self, request: HttpRequest) -> HttpResponse:
        """List what the retention task would delete now, and why; nothing is deleted."""
        due = retention.due_sessions()
        context = {
            **self.admin_site.each_context(request),
            "title": "Retention dry run",
            "due": due,
            "now": timezone.now(),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "governance/retention_dry_run.html", context)


@admin.register(TeamPolicy)
class TeamPolicyAdmin(admin.ModelAdmin):
    list_display = ["team", "retention_days", "block_sharing_with_findings"]

    def save_model(self, request: HttpRequest, obj: TeamPolicy, form: Any, change: bool) -> None:
        saved = retention.set_team_policy(
            actor=request.user,
            team=obj.team,
            retention_days=obj.retention_days,
            block_sharing_with_findings=obj.block_sharing_with_findings,
        )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: TeamPolicy) -> None:
        retention.set_team_policy(
            actor=request.user, team=obj.team, retention_days=None, block_sharing_with_findings=False
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a team without rules is a policy with none set (logged like any change)


@admin.register(UserRetention)
class UserRetentionAdmin(admin.ModelAdmin):
    list_display = ["user", "retention_days"]
    raw_id_fields = ["user"]

    def save_model(self, request: HttpRequest, obj: UserRetention, form: Any, change: bool) -> None:
        retention.set_user_retention(actor=request.user, user=obj.user, retention_days=obj.retention_days)
        obj.pk = UserRetention.objects.get(user=obj.user).pk

    def delete_model(self, request: HttpRequest, obj: UserRetention) -> None:
        retention.set_user_retention(actor=request.user, user=obj.user, retention_days=None)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[UserRetention]) -> None:
        for rule in queryset.select_related("user"):
            retention.set_user_retention(actor=request.user, user=rule.user, retention_days=None)


@admin.register(LinkView)
class LinkViewAdmin(ReadOnly):
    list_display = ["link", "viewer", "day", "count", "first_at", "last_at"]
    list_select_related = ["link", "viewer"]
    date_hierarchy = "day"
