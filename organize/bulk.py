"""Bulk actions on a selection of the session list: a preview (a dry run), then the run.

The preview says, for the action asked, which sessions will change, which are already as asked, and which
the actor may not change and why. The run calls the one-session use case for each session that will
change, so each change is its own action-log row; a session that failed meanwhile is reported, not fatal.
A selected id the actor cannot read is answered exactly as an id that does not exist: counted as
``missing`` with nothing else said of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.actors import Actor, user_of
from core.errors import AccessDenied, NotSignedIn, NotVisible
from organize import queries, services
from organize.models import SessionTag, Tag
from sessions_app.facade import ChatSession, SessionShare, SharingRefused
from sessions_app.facade import services as session_services
from teams.facade import Team, team_role

ACTIONS = ("tag", "untag", "archive", "restore", "share", "delete")
MAX_SELECTION = 500


@dataclass
class Plan:
    action: str
    change: list[ChatSession] = field(default_factory=list)
    unchanged: list[ChatSession] = field(default_factory=list)
    refused: list[tuple[ChatSession, str]] = field(default_factory=list)
    missing: int = 0
    failed: list[tuple[ChatSession, str]] = field(default_factory=list)
    done: bool = False


@dataclass(frozen=True)
class Request:
    action: str
    session_ids: list[int]
    tag: Tag | None = None
    team: Team | None = None
    share_access: str = "viewer"


def parse(
    user: Any, *, action: str, sessions: list[int], tag_id: int | None, team_id: int | None, share_access: str
) -> Request:
    """Check the request itself (not yet any session); a tag or team the user cannot see is NotVisible."""
    if action not in ACTIONS:
        raise services.OrganizeError(f"action: one of {', '.join(ACTIONS)}")
    if not sessions:
        raise services.OrganizeError("Select at least one session")
    if len(sessions) > MAX_SELECTION:
        raise services.OrganizeError(f"At most {MAX_SELECTION} sessions at once")
    tag = team = None
    if action in ("tag", "untag"):
        if tag_id is None:
            raise services.OrganizeError("tagId: which tag")
        tag = queries.visible_tag(user, tag_id)
        if tag is None:
            raise NotVisible(f"Tag not found: {tag_id}")
    if action == "share":
        if team_id is None:
            raise services.OrganizeError("teamId: which team")
        if share_access not in SessionShare.Access.values:
            raise services.OrganizeError(f"access: one of {', '.join(SessionShare.Access.values)}")
        team = queries.visible_team(user, team_id)
        if team is None:
            raise NotVisible(f"Team not found: {team_id}")
    return Request(action, list(dict.fromkeys(sessions)), tag, team, share_access)


def preview(actor: Actor, asked: Request) -> Plan:
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    readable = {
        s.pk: s
        for s in ChatSession.objects.visible_to(user).filter(pk__in=asked.session_ids).select_related("owner")
    }
    plan = Plan(asked.action, missing=len(asked.session_ids) - len(readable))
    ids = list(readable)
    # A few reads for the whole selection, whatever its size.
    writable = set(ChatSession.objects.editable_by(user).filter(pk__in=ids).values_list("pk", flat=True))
    archived = queries.archived_ids(ids)
    tagged: set[int] = set()
    tag_shared: set[int] = set()
    tag_role: str | None = None
    if asked.tag is not None:
        tagged = set(
            SessionTag.objects.filter(tag=asked.tag, session_id__in=ids).values_list("session_id", flat=True)
        )
        tag_shared = set(
            SessionShare.objects.filter(team=asked.tag.team, session_id__in=ids).values_list(
                "session_id", flat=True
            )
        )
        tag_role = team_role(user, asked.tag.team)
    shares: dict[int, str] = {}
    if asked.team is not None:
        shares = dict(
            SessionShare.objects.filter(team=asked.team, session_id__in=ids).values_list(
                "session_id", "access"
            )
        )
    for pk in asked.session_ids:
        session = readable.get(pk)
        if session is None:
            continue
        if asked.tag is not None:
            why = services.tag_refusal(
                tag_role, shared=pk in tag_shared, can_write=pk in writable, tag=asked.tag
            )
            already = (pk in tagged) == (asked.action == "tag")
        else:
            why, already = _judge(asked, user, session, pk in writable, pk in archived, shares.get(pk))
        if why:
            plan.refused.append((session, why))
        elif already:
            plan.unchanged.append(session)
        else:
            plan.change.append(session)
    return plan


def _judge(
    asked: Request, user: Any, session: ChatSession, writable: bool, archived: bool, shared: str | None
) -> tuple[str, bool]:
    """(why the actor may not, whether it is already as asked) for one readable session, but tagging."""
    owner = session.owner_id == user.pk
    if asked.action in ("archive", "restore"):
        if not writable:
            return "You may read this session but not change it.", False
        return "", archived == (asked.action == "archive")
    if asked.action == "share":
        if not owner:
            return "Only the session's owner may change its sharing.", False
        return "", shared == asked.share_access
    if not owner:  # delete
        return "Only the session's owner may delete it.", False
    return "", False


def run(actor: Actor, asked: Request) -> Plan:
    """Preview, then apply the action to every session that will change, one use case call each."""
    plan = preview(actor, asked)
    step = _step(actor, asked)
    for session in plan.change:
        try:
            step(session)
        except (AccessDenied, SharingRefused, ValueError, PermissionError) as exc:
            plan.failed.append((session, str(exc)))
    failed = {s.pk for s, _ in plan.failed}
    plan.change = [s for s in plan.change if s.pk not in failed]
    plan.done = True
    return plan


def _step(actor: Actor, asked: Request) -> Callable[[ChatSession], Any]:
    if asked.action == "tag":
        return lambda s: services.apply_tag(actor=actor, session=s, tag=_some(asked.tag))
    if asked.action == "untag":
        return lambda s: services.remove_tag(actor=actor, session=s, tag=_some(asked.tag))
    if asked.action == "archive":
        return lambda s: services.archive_session(actor=actor, session=s)
    if asked.action == "restore":
        return lambda s: services.restore_session(actor=actor, session=s)
    if asked.action == "share":
        return lambda s: session_services.share_with_team(
            session=s, team=_some(asked.team), access=asked.share_access, actor=actor
        )
    return lambda s: session_services.delete_session(session=s, actor=actor)


def _some[T](value: T | None) -> T:
    assert value is not None
    return value


def describe(plan: Plan) -> dict[str, Any]:
    def row(session: ChatSession) -> dict[str, Any]:
        return {"id": session.pk}

    def named(session: ChatSession) -> dict[str, Any]:
        # Only the sessions a person must look at are named (a title may cost a read of its first prompt).
        return {"id": session.pk, "name": session.title}

    return {
        "action": plan.action,
        "done": plan.done,
        "counts": {
            "change": len(plan.change),
            "unchanged": len(plan.unchanged),
            "refused": len(plan.refused),
            "missing": plan.missing,
            "failed": len(plan.failed),
        },
        "change": [row(s) for s in plan.change],
        "unchanged": [row(s) for s in plan.unchanged],
        "refused": [{**named(s), "reason": why} for s, why in plan.refused],
        "failed": [{**named(s), "reason": why} for s, why in plan.failed],
    }


__all__ = ["ACTIONS", "Plan", "Request", "describe", "parse", "preview", "run"]
