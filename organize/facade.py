"""What other apps may use of ``organize``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from organize.services import archive_session, pin_session, restore_session

__all__ = ["archive_session", "pin_session", "restore_session"]
