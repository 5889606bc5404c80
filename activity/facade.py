"""What other apps may use of ``activity``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from activity.queries import Report, team_report
from activity.rollup import rebuild_session

__all__ = ["Report", "rebuild_session", "team_report"]
