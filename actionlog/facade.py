"""What other apps may use of ``actionlog``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from actionlog import services
from actionlog.models import ActionLog
from actionlog.services import PendingAction, record_action
from actionlog.verbs import declared_verbs, spoken, verbs, verbs_by_name

__all__ = [
    "ActionLog",
    "PendingAction",
    "declared_verbs",
    "record_action",
    "services",
    "spoken",
    "verbs",
    "verbs_by_name",
]
