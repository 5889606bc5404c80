"""The API's answers to what the session use cases refuse (``core.api.errors`` gives the body's shape)."""

from __future__ import annotations

from rest_framework import status

from core.api.errors import register_error
from pitree.operations import TreeOperationError
from pitree.storable import Unstorable
from sessions_app.queries import EntryNotFound
from sessions_app.services.errors import (
    AppendConflict,
    InvalidEntries,
    InvalidSessionFile,
    QuotaExceeded,
    SharingRefused,
)

register_error(EntryNotFound, status.HTTP_404_NOT_FOUND)
register_error(
    AppendConflict,
    status.HTTP_409_CONFLICT,
    message=lambda exc: f"The session's leaf is {exc.actual!r}, not the expected {exc.expected!r}",
    extra=lambda exc: {"leafId": exc.actual},
)
register_error(TreeOperationError, status.HTTP_400_BAD_REQUEST, message=lambda exc: exc.message)
register_error(InvalidSessionFile, status.HTTP_400_BAD_REQUEST)
register_error(InvalidEntries, status.HTTP_400_BAD_REQUEST)
register_error(Unstorable, status.HTTP_400_BAD_REQUEST)
register_error(SharingRefused, status.HTTP_409_CONFLICT)
register_error(QuotaExceeded, status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
