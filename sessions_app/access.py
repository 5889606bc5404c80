"""Who may do what with a session: the single check used by API views, pages, consumers, tasks and export.

Owners and team members come through ``ChatSession.objects.visible_to/editable_by``. A share link grants
read access to anyone holding its token, limited to its scope (the whole tree or one path) and, when
frozen, to the entries that existed at that point.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from . import realtime
from .models import ActionLog, ChatSession, Entry, SessionShare, ShareLink, Team, TeamMembership

__all__ = [
    "Access",
    "create_share_link",
    "log_action",
    "resolve_access",
    "revoke_share_link",
    "share_with_team",
    "unshare_with_team",
]


@dataclass(frozen=True, slots=True)
class Access:
    session: ChatSession
    can_write: bool
    link: ShareLink | None = None

    @property
    def via_link(self) -> bool:
        return self.link is not None

    def max_seq(self) -> int | None:
        """Return the last append sequence a frozen link may see, or None for no limit."""
        return self.link.frozen_seq if self.link is not None else None

    def path_leaf(self) -> str | None:
        """Return the entry a path-scoped link is limited to (root → it), or None for the whole tree."""
        if self.link is None or self.link.scope != ShareLink.Scope.PATH:
            return None
        return self.link.entry_id or self.session.leaf_entry_id


def _live_link(token: str) -> ShareLink | None:
    link = ShareLink.objects.select_related("session").filter(token=token).first()
    if link is None or link.revoked_at is not None:
        return None
    if link.expires_at is not None and link.expires_at <= timezone.now():
        return None
    return link


def resolve_access(user: Any, session_pk: int, *, link_token: str | None = None) -> Access | None:
    """Return what ``user`` (or the holder of ``link_token``) may do with the session, or None."""
    session = ChatSession.objects.visible_to(user).filter(pk=session_pk).first()
    if session is not None:
        writable = ChatSession.objects.editable_by(user).filter(pk=session_pk).exists()
        return Access(session, writable)
    if link_token:
        link = _live_link(link_token)
        if link is not None and link.session_id == session_pk:
            return Access(link.session, False, link)
    return None


def log_action(*, actor: Any, action: str, session: ChatSession | None, **detail: Any) -> None:
    """Append one line to the action log."""
    ActionLog.objects.create(
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        session=session,
        session_label=str(session) if session is not None else "",
        detail=detail,
    )


def share_with_team(*, session: ChatSession, team: Team, access: str, actor: Any) -> SessionShare:
    """Share a session with a team (viewer or editor access); only the owner may share."""
    if session.owner_id != actor.pk:
        raise PermissionError("only the session's owner may share it")
    if access not in SessionShare.Access.values:
        raise ValueError(f"access must be one of {', '.join(SessionShare.Access.values)}")
    with transaction.atomic():
        share, _ = SessionShare.objects.update_or_create(
            session=session, team=team, defaults={"access": access, "created_by": actor}
        )
        log_action(actor=actor, action=ActionLog.Action.SHARE, session=session, team=team.name, access=access)
    return share


def unshare_with_team(*, session: ChatSession, team: Team, actor: Any) -> None:
    """Stop sharing with a team; open live views of its members are closed."""
    if session.owner_id != actor.pk:
        raise PermissionError("only the session's owner may change sharing")
    with transaction.atomic():
        SessionShare.objects.filter(session=session, team=team).delete()
        log_action(actor=actor, action=ActionLog.Action.REVOKE, session=session, team=team.name)
        transaction.on_commit(partial(realtime.broadcast, session.pk, "access_changed"))


def create_share_link(
    *,
    session: ChatSession,
    actor: Any,
    scope: str = ShareLink.Scope.TREE,
    entry_id: str | None = None,
    frozen: bool = False,
    expires_at: Any = None,
) -> ShareLink:
    """Create a read-only link; a frozen link sees the session as it is now (or up to ``entry_id``)."""
    if session.owner_id != actor.pk:
        raise PermissionError("only the session's owner may create share links")
    if scope not in ShareLink.Scope.values:
        raise ValueError(f"scope must be one of {', '.join(ShareLink.Scope.values)}")
    frozen_seq = None
    if entry_id is not None:
        row = Entry.objects.filter(session=session, entry_id=entry_id).order_by("-seq").first()
        if row is None:
            raise LookupError(f"Entry {entry_id} not found")
        if frozen:
            frozen_seq = row.seq
    elif frozen:
        frozen_seq = session.next_seq - 1
        if scope == ShareLink.Scope.PATH:
            entry_id = session.leaf_entry_id
    with transaction.atomic():
        link = ShareLink.objects.create(
            session=session,
            token=secrets.token_urlsafe(24),
            scope=scope,
            entry_id=entry_id,
            frozen_seq=frozen_seq,
            expires_at=expires_at,
            created_by=actor,
        )
        log_action(actor=actor, action=ActionLog.Action.SHARE, session=session, link=link.pk, scope=scope)
    return link


def revoke_share_link(*, link: ShareLink, actor: Any) -> None:
    """Revoke a link at once; live views opened through it are closed."""
    if link.session.owner_id != actor.pk:
        raise PermissionError("only the session's owner may revoke its links")
    with transaction.atomic():
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        log_action(actor=actor, action=ActionLog.Action.REVOKE, session=link.session, link=link.pk)
        transaction.on_commit(partial(realtime.broadcast, link.session_id, "link_revoked", link=link.pk))


def team_role(user: Any, team: Team) -> str | None:
    """Return the user's role in the team, or None."""
    membership = TeamMembership.objects.filter(team=team, user=user).first()
    return membership.role if membership else None
