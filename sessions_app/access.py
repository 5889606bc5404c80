"""Who may do what with a session: the single check used by API views, pages, consumers, tasks and export.

Owners and team members come through ``ChatSession.objects.visible_to/editable_by``. A share link grants
read access to anyone holding its token, limited to its scope (the whole tree or one path) and, when
frozen, to the entries that existed at that point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.actors import Actor, LinkActor, SystemActor
from core.errors import AccessDenied, Forbidden, NotSignedIn, NotVisible
from sessions_app import signals
from sessions_app.link_tokens import hash_token
from sessions_app.models import ChatSession, Entry, ShareLink
from sessions_app.queries import EntryNotFound, find_entry, path_ranges
from teams.facade import team_of, team_role

LINK_HEADER = "X-Share-Token"
LINK_PARAM = "link"
READ_ONLY = "You may read this session but not change it."
OWNER_ONLY = "Only the session's owner may change its sharing."

__all__ = [
    "LINK_HEADER",
    "Access",
    "AccessDenied",
    "Forbidden",
    "NotSignedIn",
    "NotVisible",
    "acting",
    "authorize",
    "link_access",
    "link_token",
    "require_access",
    "require_owner",
    "require_read",
    "require_write",
    "resolve_access",
    "still_writable",
    "team_of",
    "team_role",
]


READ, WRITE, OWNER = "read", "write", "owner"


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
            raise EntryNotFound(f"Entry {entry_id} not found")
        return row


def _live_link(token: str) -> ShareLink | None:
    # Only hashes are stored: any text, real or not, costs the same hash and one index lookup. A deleted
    # session's links die with it, though its rows are purged later.
    link = (
        ShareLink.objects.select_related("session")
        .filter(token_hash=hash_token(token), session__deleted_at__isnull=True)
        .first()
    )
    if link is None or link.state() != "active":
        return None
    return link


def link_access(token: str) -> Access | None:
    """Return the read access a share-link token grants (to its own session), or None."""
    link = _live_link(token)
    return Access(link.session, False, link) if link is not None else None


def resolve_access(user: Any, session_pk: int, *, link_token: str | None = None) -> Access | None:
    """Return what ``user`` (or the holder of ``link_token``) may do with the session, or None."""
    found = ChatSession.objects.grant_for(user, session_pk)
    if found is not None:
        return Access(*found)
    if link_token:
        link = _live_link(link_token)
        if link is not None and link.session_id == session_pk:
            signals.link_opened.send(ShareLink, link=link, user=_signed_in_user(user), via="api")
            return Access(link.session, False, link)
    return None


def _signed_in_user(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def link_token(request: Any) -> str | None:
    """Return the share-link token a request carries (header or ``?link=``), if any."""
    headers = getattr(request, "headers", {})
    token = headers.get(LINK_HEADER) if headers else None
    params = getattr(request, "query_params", None) or getattr(request, "GET", {})
    return token or params.get(LINK_PARAM) or None


def require_read(request: Any, session_pk: int, *, links: bool = True) -> Access:
    """Return the caller's access to the session, or raise NotSignedIn / NotVisible.

    ``links=False`` ignores share links (for reads that belong to collaborators only, such as run prompts).
    """
    token = link_token(request) if links else None
    return require_access(getattr(request, "user", None), session_pk, link_token=token)


def require_access(user: Any, session_pk: int, *, link_token: str | None = None) -> Access:
    """Return what ``user`` (or the link holder) may do with the session, or raise.

    Anonymous callers without a link are told to sign in (NotSignedIn); anyone else who may not see the
    session is told it does not exist (NotVisible), so its existence does not leak.
    """
    access = resolve_access(user, session_pk, link_token=link_token)
    if access is None:
        if not getattr(user, "is_authenticated", False) and not link_token:
            raise NotSignedIn()
        raise NotVisible(f"Session not found: {session_pk}")
    return access


def require_write(request: Any, session_pk: int) -> Access:
    """Return write access to the session, or raise: 404 if it is not visible, 403 if only readable."""
    access = require_read(request, session_pk)
    if not access.can_write:
        raise Forbidden(READ_ONLY)
    return access


def require_owner(request: Any, session_pk: int) -> ChatSession:
    """Return the session if the caller owns it: 404 if they cannot see it, 403 otherwise."""
    access = require_read(request, session_pk, links=False)
    if access.session.owner_id != request.user.pk:
        raise Forbidden(OWNER_ONLY)
    return access.session


def authorize(actor: Actor, session: ChatSession, need: str, *, grant: Access | None = None) -> Access:
    """Return the actor's grant on the session if it allows ``need`` (read, write or owner), else raise.

    A system actor (a worker or a command) acts on the server's authority: the adapter that queued its
    work checked the user then, and tasks re-check before writing. A link actor may read its own session.
    A ``grant`` the adapter already resolved is checked without another query. There is no implicit
    actor: ``None`` is refused.
    """
    if actor is None:
        raise TypeError("authorize() needs an actor: a user, a link actor or a system actor")
    if isinstance(actor, SystemActor):
        return grant if grant is not None else Access(session, True)
    if isinstance(actor, LinkActor):
        if grant is None:
            if actor.link.session_id != session.pk or _live_link_row(actor.link) is None:
                raise NotVisible(f"Session not found: {session.pk}")
            grant = Access(session, False, actor.link)
    elif grant is None:
        if getattr(actor, "pk", None) is not None and session.owner_id == actor.pk:
            grant = Access(session, True)
        else:
            found = resolve_access(actor, session.pk)
            if found is None:
                raise NotVisible(f"Session not found: {session.pk}")
            grant = found
    if need == WRITE and not grant.can_write:
        raise Forbidden(READ_ONLY)
    if need == OWNER and (grant.link is not None or session.owner_id != getattr(actor, "pk", None)):
        raise Forbidden(OWNER_ONLY)
    return grant


def _live_link_row(link: ShareLink) -> ShareLink | None:
    """Return the link as stored now if it still works (not revoked, expired, or its session deleted)."""
    fresh = (
        ShareLink.objects.select_related("session")
        .filter(pk=link.pk, session__deleted_at__isnull=True)
        .first()
    )
    return fresh if fresh is not None and fresh.state() == "active" else None


def acting(user: Any, grant: Access) -> Actor:
    """Return who acts in a request: the signed-in user, else the holder of the link the grant came from."""
    if getattr(user, "is_authenticated", False) or grant.link is None:
        return user
    return LinkActor(grant.link)


def still_writable(user: Any, session_pk: int) -> bool:
    """Return whether ``user`` may still change the session (background work checks before writing)."""
    return ChatSession.objects.editable_by(user).filter(pk=session_pk).exists()
