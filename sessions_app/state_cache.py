"""Values derived from a session's entries, cached per session state: built once, never invalidated.

Entries are append-only, so a session's next seq (with its leaf seq, for what depends on the leaf) names one
state exactly: a key built from it never goes stale, an append or a leaf move simply asks for a new key.
The one rewrite of stored lines (redacting a secret) bumps the session's revision, which the key holds too.
The creation time keeps a recreated database's sessions (whose primary keys start over) from meeting an
old value; each kind carries a version that changes when the value's shape does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from django.core.cache import caches
from django.db import connection
from django.db.models import F

from sessions_app.models import ChatSession

__all__ = ["bump_revision", "cached", "state_key"]


def state_key(kind: str, session: ChatSession, *parts: object) -> str:
    """Return the key of ``kind`` (a name and its version) for the session as it is now, and ``parts``."""
    base = f"{kind}:{session.pk}:{session.created_at.timestamp():.6f}:{session.next_seq}.{session.revision}"
    return ":".join([base, *(str(p) for p in parts)])


# How long a build may hold its claim, and how long another reader waits for it before building too.
BUILD_CLAIM_SECONDS = 30
WAIT_SECONDS = 3.0
POLL_SECONDS = 0.02


def cached[T](key: str, build: Callable[[], T], ttl_seconds: int) -> T:
    """Return the value stored under ``key`` in the shared cache, building and storing it when missing.

    One reader builds a missing value; readers asking for it meanwhile (a team opening the same session
    at once, in any process) wait for that build instead of repeating it. A reader waits at most
    WAIT_SECONDS, and not at all once the build has given up (its claim is gone), then builds itself.
    """
    cache = caches["shared"]
    value: Any = cache.get(key)
    if value is not None:
        return cast(T, value)
    claim = f"{key}:building"
    if not cache.add(claim, 1, BUILD_CLAIM_SECONDS):
        if not connection.in_atomic_block:
            # Back to the process's pool while waiting: the builder, or anyone else, may need it.
            connection.close()
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            found = cache.get_many([key, claim])
            if key in found:
                return cast(T, found[key])
            if claim not in found:
                break  # the build failed (a missing entry, say): this reader's own build says why
    try:
        value = build()
        cache.set(key, value, ttl_seconds)
    finally:
        cache.delete(claim)
    return cast(T, value)


def bump_revision(session_pk: int) -> None:
    """Mark what was derived from a session's entries as rewritten in place (its costs recounted, say).

    Every state key, and so every cached answer and ETag, of the session changes with it. Call it in the
    transaction that rewrote the rows, holding the session's row lock as the entry store does.
    """
    ChatSession.objects.filter(pk=session_pk).update(revision=F("revision") + 1)
