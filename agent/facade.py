"""What other apps may use of ``agent``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from agent import signals
from agent.models import AgentRun
from agent.services import close_run

__all__ = [
    "AgentRun",
    "close_run",
    "signals",
]
