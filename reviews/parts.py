"""What reviews add to sessions_app's pages through its hooks: the list's ``review`` filter and badge,
and the session page's review status (bar) and panel (end)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from reviews import queries
from reviews.domain.status import APPROVED, CHANGES, OUTDATED, PENDING
from reviews.models import Review
from sessions_app.facade import (
    Badge,
    ChatSession,
    FilterError,
    PagePart,
    SessionFilter,
    register_badges,
    register_page_part,
    register_session_filter,
    viewer_roles,
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
PANEL_REVIEWS = 20  # the newest shown in the session page's panel
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
        queries.of_readable_sessions(viewer, [s.pk for s in sessions])
        .filter(status__in=_PRECEDENCE)
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


def _on_page(request: Any, session: ChatSession) -> list[Review]:
    """The session's reviews the viewer sees, read once for the bar's status and the panel."""
    memo: tuple[int, list[Review]] | None = getattr(request, "_piweb_reviews", None)
    if memo is None or memo[0] != session.pk:
        memo = (session.pk, queries.reviews_on_page(request.user, session, list(viewer_roles(request))))
        request._piweb_reviews = memo
    return memo[1]


def _signed_in(request: Any, grant: Access) -> bool:
    user = getattr(request, "user", None)
    # A link's visitors see the session, not the team's reviews of it.
    return not grant.via_link and user is not None and user.is_authenticated


def _panel(request: Any, grant: Access, session: ChatSession) -> dict[str, Any] | None:
    if not _signed_in(request, grant):
        return None
    user = request.user
    reviews = [queries.serialize(r, user) for r in _on_page(request, session)[:PANEL_REVIEWS]]
    # Where a review can live: the teams the session is shared with that the viewer belongs to.
    teams = queries.shared_teams(session, user) if grant.can_write else []
    return {
        "reviews": reviews,
        "session_id": session.pk,
        "leaf": session.leaf_entry_id or "",
        "can_request": grant.can_write and bool(teams),
        "teams": teams,
    }


def _status(request: Any, grant: Access, session: ChatSession) -> dict[str, Any] | None:
    if not _signed_in(request, grant):
        return None
    statuses = {r.status for r in _on_page(request, session)}
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
