"""A review's overall status from its reviewers' decisions, and what a note may hold."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "APPROVED",
    "CHANGES",
    "DECISIONS",
    "MAX_NOTE_CHARS",
    "OUTDATED",
    "PENDING",
    "STATUSES",
    "WITHDRAWN",
    "InvalidReview",
    "check_note",
    "overall",
]

PENDING = "pending"
APPROVED = "approved"
CHANGES = "changes"
OUTDATED = "outdated"
WITHDRAWN = "withdrawn"
# What a reviewer may answer, and every status a review may have.
DECISIONS = (APPROVED, CHANGES)
STATUSES = (PENDING, APPROVED, CHANGES, OUTDATED, WITHDRAWN)
MAX_NOTE_CHARS = 4000


class InvalidReview(ValueError):
    """The request or decision cannot be taken as sent; the message names the problem."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def overall(decisions: Iterable[str], *, withdrawn: bool = False, outdated: bool = False) -> str:
    """Withdrawn and outdated win; then one request for changes; approved only when everyone approved."""
    if withdrawn:
        return WITHDRAWN
    if outdated:
        return OUTDATED
    seen = list(decisions)
    if CHANGES in seen:
        return CHANGES
    if seen and all(d == APPROVED for d in seen):
        return APPROVED
    return PENDING


def check_note(note: object) -> str:
    """Return the note to store (stripped; may be empty), or raise InvalidReview."""
    if note is None:
        return ""
    if not isinstance(note, str):
        raise InvalidReview("The note must be text.", field="note")
    if len(note) > MAX_NOTE_CHARS:
        raise InvalidReview(
            f"The note is {len(note)} characters long; at most {MAX_NOTE_CHARS}.", field="note"
        )
    if "\x00" in note or any(0xD800 <= ord(c) <= 0xDFFF for c in note):
        raise InvalidReview("The note holds a NUL character or a lone surrogate.", field="note")
    return note.strip()
