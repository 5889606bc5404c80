"""Team shares and share links: every change of who may see a session beyond its owner.

Each function checks the actor's right through ``access``, writes, logs and announces after commit in
one transaction; live views that may have lost access are told to re-check it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, user_of
from core.errors import InvalidSharing
from core.staff import authorize_staff
from pitree.storable import MAX_NAME_CHARS, check_text
from sessions_app import access, link_tokens, signals
from sessions_app.models import ChatSession, Entry, SessionShare, ShareLink
from sessions_app.queries import EntryNotFound
from sessions_app.verbs import Action
from teams.facade import Team

__all__ = [
    "InvalidSharing",
    "create_share_link",
    "find_link",
    "revoke_share_link",
    "share_by_team_defaults",
    "share_with_team",
    "unshare_with_team",
]


# -- team shares ----------------------------------------------------------------------------------------


def share_with_team(
    *, session: ChatSession, team: Team | int, access: str, actor: Actor, as_staff: bool = False
) -> SessionShare:
    """Share a session with one of the owner's teams, as viewer or editor (the owner only).

    ``as_staff``: a staff member shares from the admin, with any team; the team's sharing policy still
    applies, and the row says ``by_staff``.
    """
    if as_staff:
        authorize_staff(actor, "sessions_app.change_sessionshare")
        found = _any_team(team)
    else:
        _authorize_owner(actor, session)
        found = _team(actor, team)
    if access not in SessionShare.Access.values:
        raise InvalidSharing("access", f"access must be one of {', '.join(SessionShare.Access.values)}")
    signals.sharing_requested.send(ChatSession, session=session, team=found, actor=actor)
    with transaction.atomic():
        share, created = SessionShare.objects.update_or_create(
            session=session, team=found, defaults={"access": access, "created_by": user_of(actor)}
        )
        record_action(
            actor=actor, action=Action.SHARE, session=session, team=found, access=access, **_staff(as_staff)
        )
        # A share turned from editor to viewer takes write access away from open pages at once.
        transaction.on_commit(partial(realtime.broadcast, session.pk, "access_changed"))
        if created:
            transaction.on_commit(
                partial(
                    signals.session_shared.send,
                    ChatSession,
                    session=session,
                    team=found,
                    actor=actor,
                    access=access,
                )
            )
    return share


def unshare_with_team(
    *, session: ChatSession, team: Team | int, actor: Actor, as_staff: bool = False
) -> None:
    """Stop sharing with a team (the owner, or staff from the admin); its members' live views close."""
    if as_staff:
        authorize_staff(actor, "sessions_app.delete_sessionshare")
    else:
        _authorize_owner(actor, session)
    team_id = team.pk if isinstance(team, Team) else team
    share = SessionShare.objects.select_related("team").filter(session=session, team_id=team_id).first()
    if share is None:
        raise access.NotVisible(f"The session is not shared with team {team_id}")
    with transaction.atomic():
        share.delete()
        record_action(actor=actor, action=Action.REVOKE, session=session, team=share.team, **_staff(as_staff))
        transaction.on_commit(partial(realtime.broadcast, session.pk, "access_changed"))


def _team(actor: Actor, team: Team | int) -> Team:
    """Return the team if the actor belongs to it: a session is shared only with one's own teams."""
    return access.team_of(actor, team.pk if isinstance(team, Team) else team, owner=False)


def _any_team(team: Team | int) -> Team:
    if isinstance(team, Team):
        return team
    found = Team.objects.filter(pk=team).first()
    if found is None:
        raise InvalidSharing("team", f"No team {team}")
    return found


def _authorize_owner(actor: Actor, session: ChatSession) -> None:
    access.authorize(actor, session, access.OWNER)


def _staff(as_staff: bool) -> dict[str, Any]:
    """The log row's mark of a change made from the admin."""
    return {"by_staff": True} if as_staff else {}


# -- share links ----------------------------------------------------------------------------------------


def create_share_link(
    *,
    session: ChatSession,
    actor: Actor,
    scope: str = ShareLink.Scope.TREE,
    entry_id: str | None = None,
    frozen: bool = False,
    expires_at: Any = None,
) -> ShareLink:
    """Create a read-only link; a frozen link sees the session as it is now (or up to ``entry_id``).

    Only the token's hash is stored; the returned link carries the token in ``raw_token``, the one time
    it is known.
    """
    check_text(entry_id, "entryId", max_chars=MAX_NAME_CHARS)
    _authorize_owner(actor, session)
    if scope not in ShareLink.Scope.values:
        raise InvalidSharing("scope", f"scope must be one of {', '.join(ShareLink.Scope.values)}")
    signals.sharing_requested.send(ChatSession, session=session, team=None, actor=actor)
    frozen_seq = None
    if entry_id is not None:
        row = Entry.objects.filter(session=session, entry_id=entry_id).order_by("-seq").first()
        if row is None:
            raise EntryNotFound(f"Entry {entry_id} not found")
        if frozen:
            frozen_seq = row.seq
    elif frozen:
        frozen_seq = session.next_seq - 1
        # A frozen link keeps the leaf of the moment, whatever its scope.
        entry_id = session.leaf_entry_id
    elif scope == ShareLink.Scope.PATH:
        # "The current path" is the path of this moment: the link must not follow the leaf elsewhere.
        entry_id = session.leaf_entry_id
    token = link_tokens.new_token()
    with transaction.atomic():
        link = ShareLink.objects.create(
            session=session,
            token_hash=link_tokens.hash_token(token),
            token_prefix=link_tokens.token_prefix(token),
            scope=scope,
            entry_id=entry_id,
            frozen_seq=frozen_seq,
            expires_at=expires_at,
            created_by=user_of(actor),
        )
        record_action(
            actor=actor, action=Action.SHARE, session=session, link=link.pk, scope=scope, frozen=frozen
        )
    link.raw_token = token
    return link


def find_link(link: ShareLink | int) -> ShareLink:
    """Return the link (with its session) by row or id; NotVisible when it or its session is gone."""
    if isinstance(link, ShareLink):
        return link
    found = (
        ShareLink.objects.select_related("session").filter(pk=link, session__deleted_at__isnull=True).first()
    )
    if found is None:
        raise access.NotVisible(f"Link not found: {link}")
    return found


def revoke_share_link(*, link: ShareLink | int, actor: Actor, as_staff: bool = False) -> ShareLink:
    """Revoke a link at once (the session's owner, or staff from the admin); its live views close."""
    link = find_link(link)
    if as_staff:
        authorize_staff(actor, "sessions_app.change_sharelink")
    else:
        _authorize_owner(actor, link.session)
    if link.revoked_at is not None:
        return link
    with transaction.atomic():
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        record_action(
            actor=actor, action=Action.REVOKE, session=link.session, link=link.pk, **_staff(as_staff)
        )
        transaction.on_commit(partial(realtime.broadcast, link.session_id, "link_revoked", link=link.pk))
    return link


def share_by_team_defaults(*, session: ChatSession, actor: Actor) -> list[SessionShare]:
    """Share a session just created by import or sync with each of its owner's teams that asks for it.

    Call inside the creating transaction. Only a new session is shared: one a member has unshared stays
    unshared however often it is synced again (that is how a member opts a session out).
    """
    shares: list[SessionShare] = []
    teams = Team.objects.filter(memberships__user_id=session.owner_id).exclude(default_share="")
    for team in teams.order_by("pk"):
        share, created = SessionShare.objects.get_or_create(
            session=session,
            team=team,
            defaults={"access": team.default_share, "created_by_id": session.owner_id},
        )
        if created:
            record_action(
                actor=actor,
                action=Action.SHARE,
                session=session,
                team=team,
                access=share.access,
                byDefault=True,
            )
            shares.append(share)
    return shares
