"""What other apps may use of ``actionlog``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from actionlog import services
from actionlog.models import ActionLog
from actionlog.services import Action, PendingAction, record_action

__all__ = [
    "Action",
    "ActionLog",
    "PendingAction",
    "record_action",
    "services",
]
