"""What other apps may use of ``hooks``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. Every event goes through ``emit_event``: an
app below with events of its own (a review requested or decided) sends a signal, and a receiver in
``hooks.receivers`` calls ``emit_event`` inside that write's transaction.
"""

from __future__ import annotations

from hooks.domain.events import EVENTS
from hooks.services import emit_event

__all__ = ["EVENTS", "emit_event"]
