"""Teams: create, invite, answer an invitation, change a role, remove or leave.

Nobody joins a team without consenting: an owner's invitation waits until the invitee accepts it. An
invitation answers the same whether or not the username exists, so team owners cannot probe for
accounts. A team always keeps at least one owner. Every function authorizes through ``teams.access``, writes
and logs (with the team) in one transaction, and tells live views of the team's sessions to re-check
access after commit. Only signed-in users act on teams.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, SystemActor, user_of
from core.errors import InvalidSharing, NotSignedIn, NotVisible, TeamConflict
from core.staff import authorize_staff
from pitree.storable import MAX_NAME_CHARS, check_text
from teams.access import team_of
from teams.models import Team, TeamInvitation, TeamMembership
from teams.verbs import Action

__all__ = [
    "accept_invitation",
    "change_role",
    "create_team",
    "decline_invitation",
    "invite_member",
    "pending_invitations",
    "remove_member",
    "sent_invitations",
    "set_team_default_share",
    "staff_remove_member",
    "staff_save_team",
    "staff_set_member",
    "sync_team_memberships",
    "withdraw_invitation",
]

ROLES = TeamMembership.Role


def create_team(*, actor: Actor, name: str) -> Team:
    """Create a team; its creator becomes its owner."""
    check_text(name, "the team name", max_chars=MAX_NAME_CHARS)
    user = _user(actor)
    if name in _provider_team_names():
        # The provider's users would be put in a team this user owns.
        raise InvalidSharing("name", "This team name is kept for a team of the identity provider.")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
            TeamMembership.objects.create(team=team, user=user, role=ROLES.OWNER)
            record_action(actor=actor, action=Action.TEAM_CREATE, session=None, team=team)
    except IntegrityError:
        raise InvalidSharing("name", "A team with this name already exists.") from None
    return team


def invite_member(*, actor: Actor, team_id: int, username: str, role: str) -> None:
    """Invite a user to the team with a role (team owners only).

    The answer is the same for an unknown user, a member and a newcomer; a member's role is changed
    with ``change_role``, never by an invitation. The log says whether an invitation was sent.
    """
    user = _user(actor)
    team = team_of(user, team_id, owner=True)
    _check_role(role)
    check_text(username, "the username", max_chars=MAX_NAME_CHARS)
    invitee = get_user_model().objects.filter(username=username).first()
    invited = invitee is not None and not TeamMembership.objects.filter(team=team, user=invitee).exists()
    with transaction.atomic():
        if invited:
            TeamInvitation.objects.update_or_create(
                team=team, user=invitee, defaults={"role": role, "invited_by": user}
            )
        record_action(
            actor=actor,
            action=Action.TEAM_INVITE,
            session=None,
            team=team,
            username=username,
            role=role,
            invited=invited,
        )


def pending_invitations(*, actor: Actor) -> list[TeamInvitation]:
    """Return the invitations waiting for the actor's answer, newest first."""
    return list(
        TeamInvitation.objects.filter(user=user_of(actor))
        .select_related("team", "invited_by")
        .order_by("-created_at")
    )


def sent_invitations(*, actor: Actor, team_id: int) -> list[TeamInvitation]:
    """Return the team's invitations still waiting for an answer (team owners only), newest first."""
    team = team_of(_user(actor), team_id, owner=True)
    return list(
        TeamInvitation.objects.filter(team=team)
        .select_related("team", "user", "invited_by")
        .order_by("-created_at")
    )


def withdraw_invitation(*, actor: Actor, team_id: int, invitation_id: int) -> None:
    """Withdraw an invitation nobody has answered yet (team owners only)."""
    team = team_of(_user(actor), team_id, owner=True)
    with transaction.atomic():
        invitation = (
            TeamInvitation.objects.select_for_update()
            .select_related("user")
            .filter(pk=invitation_id, team=team)
            .first()
        )
        if invitation is None:
            raise NotVisible(f"Invitation not found: {invitation_id}")
        invitation.delete()
        record_action(
            actor=actor,
            action=Action.TEAM_WITHDRAW,
            session=None,
            team=team,
            username=invitation.user.get_username(),
            role=invitation.role,
        )


def set_team_default_share(*, actor: Actor, team_id: int, access_level: str) -> Team:
    """Set the access new sessions of members are shared with by default: viewer, editor or "" (team owners).

    It applies to sessions members import or sync from now on; each member can unshare one (opt out).
    """
    team = team_of(_user(actor), team_id, owner=True)
    if access_level not in Team.DefaultShare.values:
        raise InvalidSharing("defaultShare", "defaultShare must be viewer, editor or null (not shared)")
    with transaction.atomic():
        before = team.default_share
        team.default_share = access_level
        team.save(update_fields=["default_share"])
        record_action(
            actor=actor,
            action=Action.TEAM_SETTINGS,
            session=None,
            team=team,
            defaultShare=access_level or None,
            was=before or None,
        )
    return team


def sync_team_memberships(
    *, actor: SystemActor, user: Any, roles: Mapping[str, str], managed: Iterable[str]
) -> list[tuple[str, str, str]]:
    """Make the user's memberships of the ``managed`` teams exactly ``roles`` (team name → role).

    The identity provider's groups decide these teams: a missing team is created (marked managed by
    the provider), a membership is added or given the role, and one the groups no longer grant is
    removed (which closes the user's sockets on that team's sessions through the membership signals).
    A team of that name the provider does not manage (a user or staff made it) is left alone and the
    refusal is logged: its owner must not receive the provider's users. Other teams are left alone.
    Return the changes as (team, change, role), change being joined, role, left or refused; each is logged.
    """
    if not isinstance(actor, SystemActor):
        raise TypeError("team memberships are synced by the server on the identity provider's word")
    for role in roles.values():
        _check_role(role)
    changes: list[tuple[str, str, str]] = []
    with transaction.atomic():
        for name in sorted(set(managed) | set(roles)):
            check_text(name, "the team name", max_chars=MAX_NAME_CHARS)
            team = Team.objects.filter(name=name).first()
            wanted = roles.get(name)
            if team is None:
                if wanted is None:
                    continue
                team, created = Team.objects.get_or_create(name=name, defaults={"managed_by_provider": True})
                if created:
                    record_action(actor=actor, action=Action.TEAM_CREATE, session=None, team=team)
            if not team.managed_by_provider:
                if wanted is not None:
                    record_action(
                        actor=actor,
                        action=Action.TEAM_SYNC,
                        session=None,
                        team=team,
                        username=user.get_username(),
                        change="refused",
                        role=wanted,
                        reason="the team is not managed by the identity provider",
                    )
                    changes.append((name, "refused", wanted))
                continue
            membership = TeamMembership.objects.select_for_update().filter(team=team, user=user).first()
            was: dict[str, str] = {}
            if wanted is None and membership is not None:
                membership.delete()
                change, role = "left", membership.role
            elif wanted is not None and membership is None:
                TeamMembership.objects.create(team=team, user=user, role=wanted)
                # An invitation to a team one has just joined has nothing left to offer.
                TeamInvitation.objects.filter(team=team, user=user).delete()
                change, role = "joined", wanted
            elif wanted is not None and membership is not None and membership.role != wanted:
                was = {"was": membership.role}
                membership.role = wanted
                membership.save(update_fields=["role"])
                change, role = "role", wanted
            else:
                continue
            record_action(
                actor=actor,
                action=Action.TEAM_SYNC,
                session=None,
                team=team,
                username=user.get_username(),
                change=change,
                role=role,
                **was,
            )
            _recheck_sessions_of(team)
            changes.append((name, change, role))
    return changes


def accept_invitation(*, actor: Actor, invitation_id: int) -> Team:
    """Join the team with the invited role."""
    user = _user(actor)
    with transaction.atomic():
        invitation = _invitation(user, invitation_id)
        TeamMembership.objects.get_or_create(
            team=invitation.team, user=user, defaults={"role": invitation.role}
        )
        invitation.delete()
        record_action(
            actor=actor, action=Action.TEAM_ACCEPT, session=None, team=invitation.team, role=invitation.role
        )
        _recheck_sessions_of(invitation.team)
    return invitation.team


def decline_invitation(*, actor: Actor, invitation_id: int) -> None:
    """Refuse an invitation; the owner may invite again later."""
    with transaction.atomic():
        invitation = _invitation(_user(actor), invitation_id)
        invitation.delete()
        record_action(actor=actor, action=Action.TEAM_DECLINE, session=None, team=invitation.team)


def change_role(*, actor: Actor, team_id: int, username: str, role: str) -> Team:
    """Change a member's role (team owners only); the last owner cannot be demoted."""
    team = team_of(_user(actor), team_id, owner=True)
    _check_role(role)
    with transaction.atomic():
        membership = _membership(team, username)
        if membership.role == ROLES.OWNER and role != ROLES.OWNER:
            _keep_an_owner(team, "demote")
        before = membership.role
        membership.role = role
        membership.save(update_fields=["role"])
        record_action(
            actor=actor,
            action=Action.TEAM_ROLE,
            session=None,
            team=team,
            username=username,
            role=role,
            was=before,
        )
        # A demotion takes write access away from open pages at once.
        _recheck_sessions_of(team)
    return team


def remove_member(*, actor: Actor, team_id: int, username: str) -> None:
    """Remove a member (team owners), or leave (any member, naming themselves); never the last owner."""
    user = _user(actor)
    leaving = username == user.get_username()
    team = team_of(user, team_id, owner=not leaving)
    with transaction.atomic():
        membership = _membership(team, username)
        if membership.role == ROLES.OWNER:
            _keep_an_owner(team, "remove")
        membership.delete()
        action = Action.TEAM_LEAVE if leaving else Action.TEAM_REMOVE
        record_action(actor=actor, action=action, session=None, team=team, username=username)
        _recheck_sessions_of(team)


def _provider_team_names() -> frozenset[str]:
    """The team names the identity provider's map manages (none without a provider)."""
    config = getattr(settings, "OIDC_SIGN_IN", None)
    return config.managed_teams if config is not None else frozenset()


def _user(actor: Actor) -> Any:
    """Return the signed-in user acting: teams are joined and run by people, never by links or workers."""
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    return user


def _check_role(role: str) -> None:
    if role not in ROLES.values:
        raise InvalidSharing("role", f"role must be one of {', '.join(ROLES.values)}")


def _membership(team: Team, username: str) -> TeamMembership:
    found = (
        TeamMembership.objects.select_for_update(of=("self",))
        .filter(team=team, user__username=username)
        .select_related("user")
        .first()
    )
    if found is None:
        raise NotVisible(f"{username} is not a member of {team.name}")
    return found


def _keep_an_owner(team: Team, verb: str) -> None:
    # Locks the owners' rows, so two owners demoting each other at once cannot both succeed.
    owners = list(TeamMembership.objects.select_for_update().filter(team=team, role=ROLES.OWNER))
    if len(owners) <= 1:
        raise TeamConflict(f"Cannot {verb} the last owner of {team.name}: make another member owner first.")


def _invitation(user: Any, invitation_id: int) -> TeamInvitation:
    found = (
        TeamInvitation.objects.select_for_update(of=("self",))
        .select_related("team")
        .filter(pk=invitation_id, user=user)
        .first()
    )
    if found is None:
        raise NotVisible(f"Invitation not found: {invitation_id}")
    return found


def _recheck_sessions_of(team: Team) -> None:
    """Tell live views of every session shared with the team to re-check access, after commit."""
    for session_id in team.shares.values_list("session_id", flat=True):
        transaction.on_commit(partial(realtime.broadcast, session_id, "access_changed"))


# -- staff, from the admin site -------------------------------------------------------------------------
# Staff run a team without belonging to it: they may add a member directly (nobody else skips the
# invitation), and every change is logged with ``by_staff``. A team with members keeps an owner.


def staff_save_team(*, actor: Actor, team: Team, changed: Iterable[str] = ()) -> Team:
    """Create ``team`` (unsaved) or save the fields named in ``changed``; staff with the admin's right."""
    creating = team.pk is None
    authorize_staff(actor, "teams.add_team" if creating else "teams.change_team")
    check_text(team.name, "the team name", max_chars=MAX_NAME_CHARS)
    if team.default_share not in Team.DefaultShare.values:
        raise InvalidSharing("defaultShare", "defaultShare must be viewer, editor or null (not shared)")
    fields = sorted(set(changed) & {"name", "default_share", "managed_by_provider"})
    try:
        with transaction.atomic():
            if creating:
                team.save()
                record_action(actor=actor, action=Action.TEAM_CREATE, session=None, team=team, by_staff=True)
            elif fields:
                team.save(update_fields=fields)
                record_action(
                    actor=actor,
                    action=Action.TEAM_SETTINGS,
                    session=None,
                    team=team,
                    name=team.name,
                    defaultShare=team.default_share or None,
                    managedByProvider=team.managed_by_provider,
                    by_staff=True,
                )
    except IntegrityError:
        raise InvalidSharing("name", "A team with this name already exists.") from None
    return team


def staff_set_member(*, actor: Actor, team: Team, user: Any, role: str) -> TeamMembership:
    """Add ``user`` to the team with ``role``, or change their role; staff with the admin's right."""
    authorize_staff(actor, "teams.change_team")
    _check_role(role)
    with transaction.atomic():
        membership = (
            TeamMembership.objects.select_for_update(of=("self",)).filter(team=team, user=user).first()
        )
        if membership is None:
            membership = TeamMembership.objects.create(team=team, user=user, role=role)
            # The invitation the member would have sent is void once they are in.
            TeamInvitation.objects.filter(team=team, user=user).delete()
            action, was = Action.TEAM_ACCEPT, None
        else:
            if membership.role == role:
                return membership
            if membership.role == ROLES.OWNER:
                _keep_an_owner(team, "demote")
            action, was = Action.TEAM_ROLE, membership.role
            membership.role = role
            membership.save(update_fields=["role"])
        record_action(
            actor=actor,
            action=action,
            session=None,
            team=team,
            username=user.get_username(),
            role=role,
            was=was,
            by_staff=True,
        )
        _recheck_sessions_of(team)
    return membership


def staff_remove_member(*, actor: Actor, team: Team, user: Any) -> None:
    """Remove ``user`` from the team; staff with the admin's right. The last owner of members stays."""
    authorize_staff(actor, "teams.change_team")
    with transaction.atomic():
        membership = _membership(team, user.get_username())
        others = TeamMembership.objects.filter(team=team).exclude(pk=membership.pk)
        if membership.role == ROLES.OWNER and others.exists():
            _keep_an_owner(team, "remove")
        membership.delete()
        record_action(
            actor=actor,
            action=Action.TEAM_REMOVE,
            session=None,
            team=team,
            username=user.get_username(),
            role=membership.role,
            by_staff=True,
        )
        _recheck_sessions_of(team)
