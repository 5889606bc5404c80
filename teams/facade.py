"""What other apps may use of ``teams``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from teams import services
from teams.access import team_of, team_role
from teams.models import Team, TeamMembership

__all__ = [
    "Team",
    "TeamMembership",
    "services",
    "team_of",
    "team_role",
]
