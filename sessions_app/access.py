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
from rest_framework.exceptions import NotAuthenticated, NotFound, PermissionDenied

from . import realtime
from .models import ActionLog, ChatSession, Entry, SessionShare, ShareLink, Team, TeamMembership
from .queries import find_entry, path_ranges

LINK_HEADER = "X-Share-Token"
LINK_PARAM = "link"

__all__ = [
    "LINK_HEADER",
    "Access",
    "create_share_link",
    "link_token",
    "log_action",
    "require_owner",
    "require_read",
    "require_write",
    "resolve_access",
    "revoke_share_link",
    "share_with_team",
    "still_writable",
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

    @property
    def restricted(self) -> bool:
        """Whether only part of the session may be seen (a frozen or path-scoped link)."""
        return self.link is not None and (
            self.link.frozen_seq is not None or self.link.scope == ShareLink.Scope.PATH
        )

    def leaf_id(self) -> str | None:
        """Return the leaf this viewer sees: the session's, or the one a frozen or path link stops at."""
        if self.link is None:
            return self.session.leaf_entry_id
        if self.link.scope == ShareLink.Scope.PATH:
            return self.path_leaf()
        if self.link.frozen_seq is not None:
            if self.link.entry_id is not None:
                return self.link.entry_id
            seq = self.session.leaf_seq
            return self.session.leaf_entry_id if seq is not None and seq <= self.link.frozen_seq else None
        return self.session.leaf_entry_id

    def last_seq(self) -> int | None:
        """Return the last append sequence this viewer may know about."""
        last = self.session.next_seq - 1 if self.session.next_seq else None
        limit = self.max_seq()
        return last if limit is None or last is None else min(last, limit)

    def sees(self, row: Entry) -> bool:
        """Return whether the entry lies inside what this viewer may see."""
        if not self.restricted:
            return True
        limit = self.max_seq()
        if limit is not None and row.seq > limit:
            return False
        leaf_id = self.path_leaf()
        if leaf_id is None:
            return self.link is None or self.link.scope != ShareLink.Scope.PATH
        leaf = Entry.objects.filter(session=self.session, entry_id=leaf_id).order_by("-seq").first()
        if leaf is None or row.depth is None or leaf.depth is None or row.depth > leaf.depth:
            return False
        ranges = path_ranges(self.session, leaf, min_depth=row.depth, max_depth=row.depth)
        return any(seg == row.segment and low <= row.depth <= high for seg, low, high in ranges)

    def entry(self, entry_id: str) -> Entry:
        """Return the entry if this viewer may see it; anything else is "not found"."""
        row = find_entry(self.session, entry_id)
        if not self.sees(row):
            raise NotFound(f"Entry {entry_id} not found")
        return row


def _live_link(token: str) -> ShareLink | None:
    link = ShareLink.objects.select_related("session").filter(token=token).first()
    if link is None or link.revoked_at is not None:
        return None
    if link.expires_at is not None and link.expires_at <= timezone.now():
        return None
    return link


def resolve_access(user: Any, session_pk: int, *, link_token: str | None = None) -> Access | None:
    """Return what ``user`` (or the holder of ``link_token``) may do with the session, or None."""
    session = ChatSession.objects.visible_to(user).select_related("owner").filter(pk=session_pk).first()
    if session is not None:
        # The owner always may write; only shared sessions need the role check.
        writable = session.owner_id == user.pk or (
            ChatSession.objects.editable_by(user).filter(pk=session_pk).exists()
        )
        return Access(session, writable)
    if link_token:
        link = _live_link(link_token)
        if link is not None and link.session_id == session_pk:
            return Access(link.session, False, link)
    return None


def link_token(request: Any) -> str | None:
    """Return the share-link token a request carries (header or ``?link=``), if any."""
    headers = getattr(request, "headers", {})
    token = headers.get(LINK_HEADER) if headers else None
    params = getattr(request, "query_params", None) or getattr(request, "GET", {})
    return token or params.get(LINK_PARAM) or None


def require_read(request: Any, session_pk: int, *, links: bool = True) -> Access:
    """Return the caller's access to the session, or raise: 404 when they may not see it.

    Anonymous callers without a working link are told to sign in. ``links=False`` ignores share links
    (for reads that belong to collaborators only, such as run prompts).
    """
    user = getattr(request, "user", None)
    access = resolve_access(user, session_pk, link_token=link_token(request) if links else None)
    if access is None:
        if not getattr(user, "is_authenticated", False) and not (links and link_token(request)):
            raise NotAuthenticated()
        raise NotFound(f"Session not found: {session_pk}")
    return access


def require_write(request: Any, session_pk: int) -> Access:
    """Return write access to the session, or raise: 404 if it is not visible, 403 if only readable."""
    access = require_read(request, session_pk)
    if not access.can_write:
        raise PermissionDenied("You may read this session but not change it.")
    return access


def require_owner(request: Any, session_pk: int) -> ChatSession:
    """Return the session if the caller owns it: 404 if they cannot see it, 403 otherwise."""
    access = require_read(request, session_pk, links=False)
    if access.session.owner_id != request.user.pk:
        raise PermissionDenied("Only the session's owner may change its sharing.")
    return access.session


def still_writable(user: Any, session_pk: int) -> bool:
    """Return whether ``user`` may still change the session (background work checks before writing)."""
    return ChatSession.objects.editable_by(user).filter(pk=session_pk).exists()


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
        # A frozen link keeps the leaf of the moment, whatever its scope.
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
