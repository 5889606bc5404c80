"""What reviews tell apps above them, after the write commits."""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["review_decided", "review_requested"]

# A review was requested or requested again: ``review``, ``actor``.
review_requested = Signal()
# A reviewer approved or asked for changes: ``review``, ``reviewer`` (the ``Reviewer`` row), ``actor``.
review_decided = Signal()
