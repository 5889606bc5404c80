"""Delete sessions left untouched longer than their retention rule allows, unless a legal hold keeps them.

A session's rule is the shortest that applies to it: the server's default (``PIWEB_RETENTION_DAYS``),
its owner's own (``UserRetention``) and that of every team it is shared with (``TeamPolicy``); with
none, it is kept forever. "Untouched" is its ``updated_at``, which every write moves. Due sessions go
through the owner's own delete (hidden at once, logged, purged by the purge worker) under the system
actor ``retention-worker``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from core.actors import Actor, SystemActor, user_of
from governance.models import LegalHold, TeamPolicy, UserRetention
from governance.verbs import Action
from sessions_app.facade import ChatSession, SessionShare, access, delete_session
from teams.facade import Team

__all__ = [
    "RETENTION_WORKER",
    "Due",
    "apply_retention",
    "due_sessions",
    "lift_hold",
    "place_hold",
    "set_team_policy",
    "set_user_retention",
]

RETENTION_WORKER = SystemActor("retention-worker")


@dataclass(frozen=True, slots=True)
class Due:
    """A session its rule says to delete: which rule, and how long it has been untouched."""

    session_id: int
    name: str
    owner: str
    updated_at: datetime
    days: int
    rule: str


def _rules() -> tuple[int | None, dict[Any, int], dict[int, tuple[int, str]]]:
    default = settings.PIWEB_RETENTION_DAYS
    users = dict(UserRetention.objects.values_list("user_id", "retention_days"))
    teams = {
        team_id: (cast(int, days), name)  # never None: the filter left those out
        for team_id, days, name in TeamPolicy.objects.filter(retention_days__isnull=False).values_list(
            "team_id", "retention_days", "team__name"
        )
    }
    return default, users, teams


def due_sessions(*, now: datetime | None = None) -> list[Due]:
    """Return the sessions due for deletion now, oldest first (what the admin's dry run lists)."""
    now = now or timezone.now()
    default, users, teams = _rules()
    every = [default, *users.values(), *(days for days, _ in teams.values())]
    shortest = min([d for d in every if d], default=None)
    if shortest is None:
        return []
    held = LegalHold.objects.values("session_id")
    candidates = (
        ChatSession.objects.filter(updated_at__lt=now - timedelta(days=shortest))
        .exclude(pk__in=held)
        .select_related("owner")
        .order_by("updated_at")
    )
    shared: dict[int, list[int]] = {}
    if teams:
        for session_id, team_id in SessionShare.objects.filter(team_id__in=teams).values_list(
            "session_id", "team_id"
        ):
            shared.setdefault(session_id, []).append(team_id)
    due: list[Due] = []
    for session in candidates:
        rules: list[tuple[int, str]] = []
        if default:
            rules.append((default, "server default"))
        if session.owner_id in users:
            rules.append((users[session.owner_id], "owner's rule"))
        for team_id in shared.get(session.pk, ()):
            days, name = teams[team_id]
            rules.append((days, f"team {name}"))
        if not rules:
            continue
        days, rule = min(rules)
        if session.updated_at < now - timedelta(days=days):
            due.append(
                Due(session.pk, str(session), session.owner.get_username(), session.updated_at, days, rule)
            )
    return due


def apply_retention(*, actor: Actor, now: datetime | None = None) -> list[Due]:
    """Delete every due session (hidden, logged under ``actor``, purged later); return what went."""
    deleted: list[Due] = []
    for due in due_sessions(now=now):
        session = ChatSession.objects.filter(pk=due.session_id).first()
        # Touched or held since the list was made: its rule no longer says so.
        if session is None or session.updated_at != due.updated_at or _held(session.pk):
            continue
        delete_session(session=session, actor=actor)
        deleted.append(due)
    return deleted


def _held(session_id: int) -> bool:
    return LegalHold.objects.filter(session_id=session_id).exists()


def _staff(actor: Actor, what: str = "place or lift legal holds") -> Any:
    user = user_of(actor)
    if user is None or not user.is_staff:
        raise access.Forbidden(f"Only staff {what}.")
    return user


def place_hold(*, actor: Actor, session: ChatSession, reason: str = "") -> LegalHold:
    """Exempt a session from retention until the hold is lifted (staff only). Logged as ``hold``."""
    user = _staff(actor)
    with transaction.atomic():
        hold, _ = LegalHold.objects.update_or_create(
            session=session, defaults={"reason": reason, "placed_by": user}
        )
        record_action(actor=actor, action=Action.HOLD, session=session, reason=reason)
    return hold


def lift_hold(*, actor: Actor, session: ChatSession) -> None:
    """Let retention rules apply to the session again (staff only). Logged as ``unhold``."""
    _staff(actor)
    with transaction.atomic():
        if LegalHold.objects.filter(session=session).delete()[0]:
            record_action(actor=actor, action=Action.UNHOLD, session=session)


def set_team_policy(
    *, actor: Actor, team: Team, retention_days: int | None, block_sharing_with_findings: bool
) -> TeamPolicy:
    """Set a team's retention and sharing rules (staff only). Logged as ``policy``."""
    _staff(actor, "set teams' rules")
    with transaction.atomic():
        policy, _ = TeamPolicy.objects.update_or_create(
            team=team,
            defaults={
                "retention_days": retention_days,
                "block_sharing_with_findings": block_sharing_with_findings,
            },
        )
        record_action(
            actor=actor,
            action=Action.POLICY,
            session=None,
            team=team,
            retention_days=retention_days,
            block_sharing_with_findings=block_sharing_with_findings,
        )
    return policy


def set_user_retention(*, actor: Actor, user: Any, retention_days: int | None) -> None:
    """Set (or with None, remove) a user's own retention rule (staff only). Logged as ``policy``."""
    _staff(actor, "set users' rules")
    with transaction.atomic():
        if retention_days is None:
            UserRetention.objects.filter(user=user).delete()
        else:
            UserRetention.objects.update_or_create(user=user, defaults={"retention_days": retention_days})
        record_action(
            actor=actor,
            action=Action.POLICY,
            session=None,
            user=user.get_username(),
            retention_days=retention_days,
        )
