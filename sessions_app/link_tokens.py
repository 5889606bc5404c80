"""Share-link tokens: minted once, stored only as a hash plus a short prefix that names them in lists.

A token is 24 random bytes (192 bits), so a single fast SHA-256 is enough: nobody can search that space,
and a slow password hash would only make every link request cost more. Looking a link up by the hash of
what the request carries also means an unknown or malformed token takes the same path as a real one.
The migration that hashed the tokens stored before uses these functions too, so keep them stable.
"""

from __future__ import annotations

import hashlib
import secrets

PREFIX_CHARS = 6
"""Characters of a token kept in clear to tell links apart in lists (36 of its 192 bits)."""

__all__ = ["PREFIX_CHARS", "hash_token", "new_token", "token_prefix"]


def new_token() -> str:
    """Return a fresh URL-safe token (24 random bytes, 32 characters)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """Return the stored form of a token: SHA-256, 64 hex digits, for any text a request may carry."""
    # surrogatepass: a lone surrogate in a URL must still hash (to nothing stored), not raise.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_prefix(token: str) -> str:
    """Return the non-secret start of a token shown in lists and the admin."""
    return token[:PREFIX_CHARS]
