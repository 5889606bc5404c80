"""How hooks' own errors answer over HTTP (registered when the app loads)."""

from __future__ import annotations

from rest_framework import status

from core.api.errors import register_error
from hooks.services import InvalidHook

register_error(InvalidHook, status.HTTP_400_BAD_REQUEST, message=lambda exc: exc.message)
