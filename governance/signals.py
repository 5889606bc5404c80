"""What governance tells apps above it, after the write commits."""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["secrets_found"]

# The secret scan recorded findings: ``session_id``, ``count`` (how many in this scan) and ``where`` (a
# short stable name of what was scanned, the same when the same lines are scanned again). Never what.
secrets_found = Signal()
