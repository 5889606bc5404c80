"""What other apps may use of ``hooks``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. An app above hooks that has an event of its
own (a review requested or decided) calls ``emit_event`` inside its write's transaction.
"""

from __future__ import annotations

from hooks.domain.events import EVENTS
from hooks.services import emit_event

__all__ = ["EVENTS", "emit_event"]
