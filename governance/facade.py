"""What other apps may use of ``governance``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from governance import signals

__all__ = ["signals"]
