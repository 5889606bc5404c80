"""Who may act on a team: its members see it, its owners change it."""

from __future__ import annotations

from typing import Any

from core.errors import Forbidden, NotVisible
from teams.models import Team, TeamMembership

__all__ = ["team_of", "team_role"]


def team_of(user: Any, team_id: int, *, owner: bool) -> Team:
    """Return a team ``user`` belongs to, else NotVisible; with ``owner``, Forbidden unless they own it."""
    found = TeamMembership.objects.select_related("team").filter(team_id=team_id, user=user).first()
    if found is None:
        raise NotVisible(f"Team not found: {team_id}")
    if owner and found.role != TeamMembership.Role.OWNER:
        raise Forbidden("Only the team's owners may change its members.")
    return found.team


def team_role(user: Any, team: Team) -> str | None:
    """Return the user's role in the team, or None."""
    membership = TeamMembership.objects.filter(team=team, user=user).first()
    return membership.role if membership else None
