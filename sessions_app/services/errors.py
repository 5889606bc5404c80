"""What the session use cases refuse with; the API maps each to its status once (``api/errors.py``)."""

from __future__ import annotations

from core.errors import TeamConflict
from pitree.placement import InvalidEntries

__all__ = [
    "AppendConflict",
    "InvalidEntries",
    "InvalidSessionFile",
    "QuotaExceeded",
    "SharingRefused",
    "TeamConflict",
]


class InvalidSessionFile(ValueError):
    """The uploaded file is not a Pi session; the message names the line."""


class AppendConflict(Exception):
    """The session's leaf moved since the caller last looked (optimistic concurrency)."""

    def __init__(self, expected: str | None, actual: str | None) -> None:
        super().__init__(f"the leaf is {actual!r}, not the expected {expected!r}")
        self.expected = expected
        self.actual = actual


class QuotaExceeded(Exception):
    """A write passes a configured limit (413): entries a session holds, bytes its owner stores, or an
    imported file's entries; the message names the limit and the numbers."""


class SharingRefused(Exception):
    """A policy forbids sharing the session now (409); the message says which and what would allow it."""
