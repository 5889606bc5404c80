"""Teams: create, invite, answer an invitation, change a role, remove or leave.

Nobody joins a team without consenting: an owner's invitation waits until the invitee accepts it. An
invitation answers the same whether or not the username exists, so team owners cannot probe for
accounts. A team always keeps at least one owner. Every function authorizes through ``access``, writes
in one transaction, and tells live views of the team's sessions to re-check access after commit.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from .. import access, realtime
from ..domain.storable import MAX_NAME_CHARS, check_text
from ..models import SessionShare, Team, TeamInvitation, TeamMembership
from .errors import TeamConflict
from .sharing import InvalidSharing

__all__ = [
    "accept_invitation",
    "change_role",
    "create_team",
    "decline_invitation",
    "invite_member",
    "pending_invitations",
    "remove_member",
]

ROLES = TeamMembership.Role


def create_team(*, actor: Any, name: str) -> Team:
    """Create a team; its creator becomes its owner."""
    check_text(name, "the team name", max_chars=MAX_NAME_CHARS)
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
            TeamMembership.objects.create(team=team, user=actor, role=ROLES.OWNER)
    except IntegrityError:
        raise InvalidSharing("name", "A team with this name already exists.") from None
    return team


def invite_member(*, actor: Any, team_id: int, username: str, role: str) -> None:
    """Invite a user to the team with a role (team owners only).

    The answer is the same for an unknown user, a member and a newcomer; a member's role is changed
    with ``change_role``, never by an invitation.
    """
    team = access.team_of(actor, team_id, owner=True)
    _check_role(role)
    check_text(username, "the username", max_chars=MAX_NAME_CHARS)
    invitee = get_user_model().objects.filter(username=username).first()
    if invitee is None or TeamMembership.objects.filter(team=team, user=invitee).exists():
        return
    with transaction.atomic():
        TeamInvitation.objects.update_or_create(
            team=team, user=invitee, defaults={"role": role, "invited_by": actor}
        )


def pending_invitations(*, actor: Any) -> list[TeamInvitation]:
    """Return the invitations waiting for the actor's answer, newest first."""
    return list(
        TeamInvitation.objects.filter(user=actor).select_related("team", "invited_by").order_by("-created_at")
    )


def accept_invitation(*, actor: Any, invitation_id: int) -> Team:
    """Join the team with the invited role."""
    with transaction.atomic():
        invitation = _invitation(actor, invitation_id)
        TeamMembership.objects.get_or_create(
            team=invitation.team, user=actor, defaults={"role": invitation.role}
        )
        invitation.delete()
        _recheck_sessions_of(invitation.team)
    return invitation.team


def decline_invitation(*, actor: Any, invitation_id: int) -> None:
    """Refuse an invitation; the owner may invite again later."""
    with transaction.atomic():
        _invitation(actor, invitation_id).delete()


def change_role(*, actor: Any, team_id: int, username: str, role: str) -> Team:
    """Change a member's role (team owners only); the last owner cannot be demoted."""
    team = access.team_of(actor, team_id, owner=True)
    _check_role(role)
    with transaction.atomic():
        membership = _membership(team, username)
        if membership.role == ROLES.OWNER and role != ROLES.OWNER:
            _keep_an_owner(team, "demote")
        membership.role = role
        membership.save(update_fields=["role"])
        # A demotion takes write access away from open pages at once.
        _recheck_sessions_of(team)
    return team


def remove_member(*, actor: Any, team_id: int, username: str) -> None:
    """Remove a member (team owners), or leave (any member, naming themselves); never the last owner."""
    leaving = username == actor.get_username()
    team = access.team_of(actor, team_id, owner=not leaving)
    with transaction.atomic():
        membership = _membership(team, username)
        if membership.role == ROLES.OWNER:
            _keep_an_owner(team, "remove")
        membership.delete()
        _recheck_sessions_of(team)


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
        raise access.NotVisible(f"{username} is not a member of {team.name}")
    return found


def _keep_an_owner(team: Team, verb: str) -> None:
    # Locks the owners' rows, so two owners demoting each other at once cannot both succeed.
    owners = list(TeamMembership.objects.select_for_update().filter(team=team, role=ROLES.OWNER))
    if len(owners) <= 1:
        raise TeamConflict(f"Cannot {verb} the last owner of {team.name}: make another member owner first.")


def _invitation(actor: Any, invitation_id: int) -> TeamInvitation:
    found = (
        TeamInvitation.objects.select_for_update(of=("self",))
        .select_related("team")
        .filter(pk=invitation_id, user=actor)
        .first()
    )
    if found is None:
        raise access.NotVisible(f"Invitation not found: {invitation_id}")
    return found


def _recheck_sessions_of(team: Team) -> None:
    """Tell live views of every session shared with the team to re-check access, after commit."""
    for session_id in SessionShare.objects.filter(team=team).values_list("session_id", flat=True):
        transaction.on_commit(partial(realtime.broadcast, session_id, "access_changed"))
