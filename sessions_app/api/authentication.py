"""API token authentication: knox's hashed tokens, under ``Bearer`` or the older ``Token`` prefix.

Kept apart from the views: DRF imports authentication classes while its own views module loads.
"""

from __future__ import annotations

import re
from typing import Any

from knox.auth import TokenAuthentication
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

__all__ = ["ApiTokenAuthentication"]

PREFIXES = (b"bearer", b"token")
# Tokens this server issues are hex (knox: 64 characters; tokens from before hashing: 40).
TOKEN_SHAPE = re.compile(rb"[0-9a-f]{40,128}")


class ApiTokenAuthentication(TokenAuthentication):
    """Knox's hashed-token check, under either prefix; a malformed token never reaches the database."""

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in PREFIXES:
            return None
        if len(parts) != 2 or not TOKEN_SHAPE.fullmatch(parts[1]):
            raise AuthenticationFailed("Invalid token header: expected 'Bearer <token>'.")
        return self.authenticate_credentials(parts[1])
