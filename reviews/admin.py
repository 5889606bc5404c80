"""Review requests and the reviewers' decisions in the admin.

Both are history and read-only here; the one write is withdrawing a request (one left open by someone who
has gone, say), which is the requester's use case run by staff (``as_staff``, logged ``by_staff``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from reviews import services
from reviews.models import Review, Reviewer

REVIEWER_INLINE_FIELDS: tuple[str, ...] = (
    "user",
    "decision",
    "note",
    "decided_at",
)

REVIEW_FIELDS: tuple[str, ...] = (
    "session",
    "of",
    "team",
    "requester",
    "requester_name",
    "note",
    "status",
    "created_at",
    "requested_at",
    "outdated_at",
    "outdated_by",
    "withdrawn_at",
)

DECISION_FIELDS: tuple[str, ...] = (
    "review",
    "user",
    "decision",
    "note",
    "decided_at",
)


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a request notifies its reviewers: it is made in the product, by its requester

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # withdrawn, a review stays: the session's page and the log still name it


class ReviewerInline(admin.TabularInline):
    model = Reviewer
    fields = REVIEWER_INLINE_FIELDS
    readonly_fields = REVIEWER_INLINE_FIELDS
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Review)
class ReviewAdmin(ReadOnly):
    list_display = [
        "id",
        "session",
        "of",
        "team",
        "requester_name",
        "status",
        "decisions",
        "requested_at",
        "withdrawn_at",
    ]
    list_filter = ["status", ("team", admin.RelatedOnlyFieldListFilter), "requested_at"]
    search_fields = [
        "session__id__exact",
        "session__name",
        "=session__pi_id",
        "team__name",
        "requester_name",
        "reviewers__user__username",
    ]
    list_select_related = ["session", "team"]
    raw_id_fields = ["session", "team", "requester"]
    fields = REVIEW_FIELDS
    readonly_fields = REVIEW_FIELDS
    inlines = [ReviewerInline]
    actions = ["withdraw_reviews"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Review]:
        # Read for the page's rows only (at most 20 reviewers each).
        return super().get_queryset(request).prefetch_related("reviewers__user")

    def has_withdraw_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("reviews.change_review")

    @admin.action(description="Withdraw the selected review requests", permissions=["withdraw"])
    def withdraw_reviews(self, request: HttpRequest, queryset: QuerySet[Review]) -> None:
        ids = list(queryset.exclude(status=Review.Status.WITHDRAWN).values_list("pk", flat=True))
        for pk in ids:
            services.withdraw_review(actor=request.user, review_id=pk, as_staff=True)
        self.message_user(request, f"{len(ids)} review request(s) withdrawn.", messages.SUCCESS)

    @admin.display(description="of")
    def of(self, review: Review) -> str:
        return f"branch at {review.entry_id}" if review.entry_id else "whole session"

    @admin.display(description="reviewers")
    def decisions(self, review: Review) -> str:
        return ", ".join(
            f"{r.user.get_username()}: {r.get_decision_display()}" for r in review.reviewers.all()
        )


@admin.register(Reviewer)
class ReviewerAdmin(ReadOnly):
    """Each decision, as the reviewer made it."""

    list_display = ["review", "user", "decision", "decided_at", "session", "team"]
    list_filter = ["decision", "decided_at"]
    search_fields = [
        "user__username",
        "review__session__id__exact",
        "review__session__name",
        "review__team__name",
    ]
    list_select_related = ["review", "review__session", "review__team", "user"]
    raw_id_fields = ["review", "user"]
    fields = DECISION_FIELDS
    readonly_fields = DECISION_FIELDS

    @admin.display(description="session")
    def session(self, reviewer: Reviewer) -> str:
        return str(reviewer.review.session)

    @admin.display(description="team")
    def team(self, reviewer: Reviewer) -> str:
        return str(reviewer.review.team)
