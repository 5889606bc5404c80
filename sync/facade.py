"""What other apps may use of ``sync``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from sync.services import Cursor, SyncConflict, SyncCursorMismatch, sync_lines

__all__ = ["Cursor", "SyncConflict", "SyncCursorMismatch", "sync_lines"]
