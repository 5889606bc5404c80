"""The tree overview as JSON, cached per session state: opening a long session costs what a short one does.

An overview depends only on the session's entries and its leaf. Entries are append-only, so the pair
(next seq, leaf seq) names one state exactly: a key built from it never needs invalidating, an append or
a leaf move simply asks for a new key. The creation time keeps a recreated database's sessions (whose
primary keys start over) from meeting an old entry; the version changes when the overview's shape does.
"""

from __future__ import annotations

import hashlib
import json

import orjson
from django.core.cache import caches

from .models import ChatSession
from .tree_overview import build_tree_overview

__all__ = ["overview_json"]

VERSION = 1
TTL_SECONDS = 600


def overview_json(session: ChatSession, *, around: str | None = None, segment: int | None = None) -> bytes:
    """Return the tree overview of ``session`` as JSON bytes, built once per session state and query."""
    near = "" if around is None else hashlib.sha256(around.encode("utf-8", "surrogatepass")).hexdigest()
    key = (
        f"tree:{VERSION}:{session.pk}:{session.created_at.timestamp():.6f}:{session.next_seq}:"
        f"{session.leaf_seq}:{near}:{segment}"
    )
    cache = caches["shared"]
    body = cache.get(key)
    if body is None:
        body = _dumps(build_tree_overview(session, around=around, segment=segment))
        cache.set(key, body, TTL_SECONDS)
    return body


def _dumps(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # a label holding a lone surrogate: JSON escapes it
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()
