"""What reviews add to sessions_app's pages through its hooks: the list's ``review`` filter and badge,
and the session page's review status (bar) and panel (end)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from reviews import queries
from reviews.domain.status import APPROVED, CHANGES, OUTDATED, PENDING
from sessions_app.facade import (
    Badge,
    ChatSession,
    FilterError,
    PagePart,
    SessionFilter,
    register_badges,
    register_page_part,
    register_session_filter,
)

if TYPE_CHECKING:
    from sessions_app.facade import Access

__all__ = ["FILTER_VALUES", "register"]

# The filter's values: a status, or ``mine`` (waiting for me). Any of them matches.
FILTER_VALUES = {
    PENDING: "pending",
    APPROVED: "approved",
    CHANGES: "changes requested",
    OUTDATED: "outdated",
    "mine": "waiting for me",
}
# Which of a session's reviews its badge names: the one that most needs someone.
_PRECEDENCE = (CHANGES, PENDING, OUTDATED, APPROVED)


def _apply(sessions: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    unknown = [v for v in values if v not in FILTER_VALUES]
    if unknown:
        raise FilterError(f"review: {unknown[0]!r} is not one of {', '.join(FILTER_VALUES)}")
    return sessions.filter(pk__in=queries.session_ids_with(viewer, values).values("session_id"))


def _choices(viewer: Any) -> list[tuple[str, str]]:
    return list(FILTER_VALUES.items())


def _badges(sessions: list[ChatSession], viewer: Any) -> dict[int, list[Badge]]:
    """One badge per session with reviews: the status that most needs someone, in one query."""
    rows = (
        queries.visible_reviews(viewer)
        .filter(session_id__in=[s.pk for s in sessions], status__in=_PRECEDENCE)
        .values_list("session_id", "status")
        .distinct()
    )
    found: dict[int, set[str]] = {}
    for session_id, status in rows:
        found.setdefault(session_id, set()).add(status)
    badges: dict[int, list[Badge]] = {}
    for session_id, statuses in found.items():
        status = next(s for s in _PRECEDENCE if s in statuses)
        badges[session_id] = [
            Badge(
                text=queries.LABELS[status],
                kind=f"review-{status}",
                title="Review status; show every session with it",
                url=f"/?review={status}",
            )
        ]
    return badges


def _panel(request: Any, grant: Access, session: ChatSession) -> dict[str, Any] | None:
    user = getattr(request, "user", None)
    if grant.via_link or user is None or not user.is_authenticated:
        return None  # a link's visitors see the session, not the team's reviews of it
    reviews = [queries.serialize(r, user) for r in queries.reviews_of_session(user, session)]
    teams = queries.shared_teams(session, user)
    return {
        "reviews": reviews,
        "session_id": session.pk,
        "leaf": session.leaf_entry_id or "",
        "can_request": grant.can_write and bool(teams),
        "teams": teams,
    }


def _status(request: Any, grant: Access, session: ChatSession) -> dict[str, Any] | None:
    user = getattr(request, "user", None)
    if grant.via_link or user is None or not user.is_authenticated:
        return None
    statuses = set(
        queries.visible_reviews(user)
        .filter(session=session, status__in=_PRECEDENCE)
        .values_list("status", flat=True)
    )
    status = next((s for s in _PRECEDENCE if s in statuses), None)
    if status is None:
        # No review yet: the button still opens the panel, where one is asked for.
        return {"status": "none", "label": "Review…"}
    return {"status": status, "label": queries.LABELS[status]}


def register() -> None:
    register_session_filter(
        SessionFilter(
            name="review",
            label="Review",
            apply=_apply,
            choices=_choices,
            kind="choice",
            order=60,
            help="Sessions with a review in this state (any of them); mine: waiting for my decision",
        )
    )
    register_badges("review", _badges)
    register_page_part(PagePart("review-status", "reviews/status.html", where="bar", context=_status))
    register_page_part(
        PagePart("review", "reviews/panel.html", where="end", context=_panel, script="reviews/review.js")
    )
