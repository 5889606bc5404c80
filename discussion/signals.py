"""What the discussion tells apps above it, after the write commits."""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["comment_written"]

# A comment was posted or edited (``comment_id``): its text is new, so the secret scan runs on it.
comment_written = Signal()
