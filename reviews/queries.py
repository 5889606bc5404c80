"""The read side of reviews, always scoped to what the viewer may read: a review shows only to members
of its team (and its requester) who may read its session, so a reviewer who lost either no longer sees
it anywhere."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Prefetch, Q, QuerySet

from reviews.domain.status import CHANGES, OUTDATED, PENDING, WITHDRAWN
from reviews.models import Review, Reviewer
from sessions_app.facade import ChatSession, SessionShare
from teams.facade import Team

__all__ = [
    "BOXES",
    "LABELS",
    "boxes",
    "of_readable_sessions",
    "reviews_of_session",
    "reviews_on_page",
    "serialize",
    "session_ids_with",
    "visible_reviews",
]

BOXES = ("mine", "others", "done")
LABELS = {
    PENDING: "review pending",
    "approved": "approved",
    CHANGES: "changes requested",
    OUTDATED: "review outdated",
    WITHDRAWN: "withdrawn",
}
MAX_DONE = 50


def visible_reviews(user: Any) -> QuerySet[Review]:
    """Return the reviews ``user`` may see: of their teams (or asked for by them), on sessions they may
    read."""
    if not getattr(user, "is_authenticated", False):
        return Review.objects.none()
    readable = ChatSession.objects.visible_to(user).values("pk")
    teams = Team.objects.filter(memberships__user=user).values("pk")
    # Its requester sees it too: one who may change the session need not be in the reviewers' team.
    return Review.objects.filter(Q(team__in=teams) | Q(requester=user), session__in=readable)


def of_readable_sessions(user: Any, session_ids: list[int]) -> QuerySet[Review]:
    """The reviews ``user`` sees on sessions the caller already found readable (a page of the list):
    ``visible_reviews`` without its readable-sessions test."""
    if not getattr(user, "is_authenticated", False) or not session_ids:
        return Review.objects.none()
    teams = Team.objects.filter(memberships__user=user).values("pk")
    return Review.objects.filter(Q(team__in=teams) | Q(requester=user), session_id__in=session_ids)


def _with_people(query: QuerySet[Review]) -> QuerySet[Review]:
    people = Reviewer.objects.select_related("user").order_by("pk")
    return query.select_related("session", "team").prefetch_related(Prefetch("reviewers", queryset=people))


def boxes(user: Any, *, team_id: int | None = None) -> dict[str, list[Review]]:
    """The queue: waiting for me (I have not decided), waiting for others (open, not on me), done."""
    base = visible_reviews(user).exclude(status=WITHDRAWN)
    if team_id is not None:
        base = base.filter(team_id=team_id)
    waiting_on_me = Reviewer.objects.filter(user=user, decision=PENDING).values("review_id")
    mine = base.filter(status=PENDING, pk__in=waiting_on_me)
    others = base.filter(status=PENDING).exclude(pk__in=waiting_on_me)
    done = base.exclude(status=PENDING)
    order = ("-requested_at", "-pk")
    return {
        "mine": list(_with_people(mine).order_by(*order)),
        "others": list(_with_people(others).order_by(*order)),
        "done": list(_with_people(done).order_by(*order)[:MAX_DONE]),
    }


def reviews_of_session(user: Any, session: ChatSession) -> list[Review]:
    """The session's reviews the viewer may see (withdrawn ones left out), newest first."""
    query = visible_reviews(user).filter(session=session).exclude(status=WITHDRAWN)
    return list(_with_people(query).order_by("-requested_at", "-pk")[:20])


def reviews_on_page(user: Any, session: ChatSession, team_ids: list[int]) -> list[Review]:
    """The reviews of a session the page's grant already lets the viewer read: those of the viewer's
    teams (``team_ids``) or asked for by them, withdrawn ones left out, newest first. Without the
    readable-sessions test of ``visible_reviews``, which the grant has answered."""
    with connection.cursor() as cursor:
        # Most sessions have no review: one plain probe spares them the query below.
        cursor.execute(f"SELECT 1 FROM {Review._meta.db_table} WHERE session_id = %s LIMIT 1", [session.pk])
        if cursor.fetchone() is None:
            return []
    query = (
        Review.objects.filter(session=session)
        .filter(Q(team_id__in=team_ids) | Q(requester=user))
        .exclude(status=WITHDRAWN)
    )
    return list(_with_people(query).order_by("-requested_at", "-pk"))


def session_ids_with(user: Any, values: list[str]) -> QuerySet[Review]:
    """The reviews matching any of the filter's values (a status, or ``mine``: waiting for me); their
    ``session_id`` narrows the list. Read from the reviews' own indexes."""
    statuses = [v for v in values if v != "mine"]
    query = visible_reviews(user)
    chosen = Review.objects.none()
    if statuses:
        chosen = chosen | query.filter(status__in=statuses)
    if "mine" in values:
        waiting = Reviewer.objects.filter(user=user, decision=PENDING).values("review_id")
        chosen = chosen | query.filter(status=PENDING, pk__in=waiting)
    return chosen


def serialize(review: Review, viewer: Any) -> dict[str, Any]:
    """A review as the API and the pages show it."""
    people = list(review.reviewers.all())
    viewer_pk = getattr(viewer, "pk", None)
    mine = next((p for p in people if p.user_id == viewer_pk), None)
    return {
        "id": review.pk,
        "sessionId": review.session_id,
        "sessionName": review.session.title,
        "entryId": review.entry_id,
        "team": {"id": review.team_id, "name": review.team.name},
        "requester": review.requester_name,
        "note": review.note,
        "status": review.status,
        "statusLabel": LABELS.get(review.status, review.status),
        "requestedAt": review.requested_at.isoformat(),
        "outdatedAt": review.outdated_at.isoformat() if review.outdated_at else None,
        "outdatedBy": review.outdated_by or None,
        "reviewers": [
            {
                "username": p.user.get_username(),
                "decision": p.decision,
                "note": p.note,
                "decidedAt": p.decided_at.isoformat() if p.decided_at else None,
            }
            for p in people
        ],
        "canDecide": mine is not None and review.status in (PENDING, "approved", CHANGES),
        "mine": review.requester_id is not None and review.requester_id == viewer_pk,
    }


def shared_teams(session: ChatSession, user: Any) -> list[tuple[int, str]]:
    """The teams the session is shared with that the user belongs to (where a review can live)."""
    rows = (
        SessionShare.objects.filter(session=session, team__memberships__user=user)
        .values_list("team_id", "team__name")
        .order_by("team__name")
    )
    return list(rows)
