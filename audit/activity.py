"""My activity: the action-log rows about one signed-in user, as a read model for the page and the API.

A row is about me when I did it (on a session I may still read, or on no session: my teams, my tokens),
or when someone else (a teammate, a link holder, one of the server's workers) did it to a session I own.
Rows about sessions I can no longer read, and other users' rows without a session, are never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from actionlog.facade import ActionLog, spoken
from audit.domain.activity import public_detail
from sessions_app.facade import ChatSession

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "ActivityPage", "activity_of", "page_of"]

DEFAULT_PAGE = 50
MAX_PAGE = 200


@dataclass(frozen=True, slots=True)
class ActivityPage:
    items: list[dict[str, Any]]
    next_before: int | None  # the ``before`` that asks for the next, older page; None on the last one


def _parts(user: Any) -> tuple[QuerySet[ActionLog], QuerySet[ActionLog]]:
    """Return the two halves of a user's activity: what they did, and what was done to their sessions.

    Kept apart so each is read through its own index (actor, session) rather than one scan of the log.
    """
    readable = ChatSession.objects.visible_to(user).values("pk")
    # The base manager: a session I deleted is still mine until its rows are purged.
    owned = ChatSession._base_manager.filter(owner=user).values("pk")
    no_session = Q(session__isnull=True, session_number__isnull=True)
    did = ActionLog.objects.filter(Q(actor=user) & (no_session | Q(session__in=readable)))
    done_to = ActionLog.objects.filter(session__in=owned)
    return did, done_to


def activity_of(user: Any) -> QuerySet[ActionLog]:
    """Return every action-log row about ``user`` (see the module's note), newest first."""
    did, done_to = _parts(user)
    return ActionLog.objects.filter(Q(pk__in=did.values("pk")) | Q(pk__in=done_to.values("pk"))).order_by(
        "-created_at", "-pk"
    )


def page_of(
    user: Any,
    *,
    action: str | None = None,
    session: int | None = None,
    before: int | None = None,
    limit: int = DEFAULT_PAGE,
) -> ActivityPage:
    """Return one page of ``user``'s activity, optionally one action or one session, older than ``before``.

    ``before`` is a row id from an earlier page; a row the user may not see counts as none (the first page).
    """
    narrow = Q()
    if action:
        narrow &= Q(action=action)
    if session is not None:
        narrow &= Q(session_id=session)
    if before is not None:
        anchor = activity_of(user).filter(pk=before).values_list("created_at", "pk").first()
        if anchor is not None:
            when, pk = anchor
            narrow &= Q(created_at__lt=when) | Q(created_at=when, pk__lt=pk)
    # Each half's newest ``limit + 1`` rows hold the page's and tell whether another follows.
    picked: dict[int, ActionLog] = {}
    for half in _parts(user):
        rows = half.filter(narrow).select_related("session").order_by("-created_at", "-pk")[: limit + 1]
        picked.update((row.pk, row) for row in rows)
    ordered = sorted(picked.values(), key=lambda r: (r.created_at, r.pk), reverse=True)
    more = len(ordered) > limit
    ordered = ordered[:limit]
    return ActivityPage(
        items=[_item(row, user) for row in ordered], next_before=ordered[-1].pk if more and ordered else None
    )


def _item(row: ActionLog, user: Any) -> dict[str, Any]:
    session = row.session
    live = session is not None and session.deleted_at is None
    return {
        "id": row.pk,
        "action": row.action,
        "actionLabel": spoken(row.action),
        "at": _iso(row.created_at),
        "actor": row.actor_name or ("you" if row.actor_id == user.pk else ""),
        "actorKind": row.actor_kind,
        "mine": row.actor_id == user.pk,
        "sessionId": row.session_id if live else None,
        "sessionName": row.session_label,
        "sessionOwned": session is not None and session.owner_id == user.pk,
        "team": row.team_label,
        "detail": public_detail(row.detail),
    }


def _iso(when: datetime) -> str:
    return when.isoformat()
