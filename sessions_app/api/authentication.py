"""API token authentication: knox's hashed tokens, under ``Bearer`` or the older ``Token`` prefix.

A verified token is cached under its digest for a minute (never past its expiry), so a busy client costs
no token queries. Deleting a token (revoke, sign-out, expiry clean-up, the user's deletion) or saving its
user (deactivation, a new password) deletes the cached entries at once, in the cache every web process
shares. Kept apart from the views: DRF imports authentication classes while its own views module loads.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.cache import caches
from django.utils import timezone
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

__all__ = ["ApiTokenAuthentication", "forget_token", "forget_user_tokens"]

CACHE_SECONDS = 60

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

    def authenticate_credentials(self, token: bytes) -> tuple[Any, Any]:
        cache = caches["shared"]
        key = _key(hash_token(token.decode("ascii")))
        hit = cache.get(key)
        now = timezone.now()
        if hit is not None and (hit[1].expiry is None or hit[1].expiry > now):
            return hit
        user, auth_token = super().authenticate_credentials(token)
        seconds = CACHE_SECONDS
        if auth_token.expiry is not None:
            seconds = min(seconds, int((auth_token.expiry - now).total_seconds()))
        if seconds > 0:
            cache.set(key, (user, auth_token), seconds)
        return user, auth_token


def _key(digest: str) -> str:
    return f"apitoken:{digest}"


def forget_token(digest: str) -> None:
    """Drop a token's cached lookup (it was deleted)."""
    caches["shared"].delete(_key(digest))


def forget_user_tokens(user_pk: Any) -> None:
    """Drop the cached lookups of every token of a user (the user changed or is gone)."""
    from ..models import ApiToken

    digests = list(ApiToken.objects.filter(user_id=user_pk).values_list("digest", flat=True))
    if digests:
        caches["shared"].delete_many([_key(d) for d in digests])
