"""What use cases of every app refuse with, where more than one app raises or maps it.

Each adapter maps these once: the REST handler to a status, the socket to a close code, a page to 404/403.
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "Forbidden",
    "InvalidSharing",
    "NotSignedIn",
    "NotVisible",
    "TeamConflict",
    "TooFrequent",
]


class AccessDenied(PermissionError):
    """The caller may not do this; the subclass says why (adapters map it to a status or close code)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotSignedIn(AccessDenied):
    """An anonymous caller without a working share link."""

    def __init__(self, message: str = "Authentication credentials were not provided.") -> None:
        super().__init__(message)


class NotVisible(AccessDenied):
    """The caller may not see the thing at all: told "not found" so its existence does not leak."""


class Forbidden(AccessDenied):
    """The caller may see the thing but not do this to it."""


class InvalidSharing(ValueError):
    """A sharing or team request names something unusable; ``field`` is the request field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class TeamConflict(Exception):
    """The change would leave a team without an owner (409)."""


class TooFrequent(Exception):
    """The caller used up a rate limit (429); ``retry_after`` is the seconds to wait."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
