"""The tree overview as JSON, cached per session state: opening a long session costs what a short one does.

An overview depends only on the session's entries and its leaf, so its key is the session's state
(``state_cache``) with the leaf seq and the query.
"""

from __future__ import annotations

import hashlib
import json

import orjson

from sessions_app.models import ChatSession
from sessions_app.state_cache import cached, state_key
from sessions_app.tree_overview import build_tree_overview

__all__ = ["json_bytes", "overview_json"]

VERSION = 1
TTL = 600  # seconds


def overview_json(session: ChatSession, *, around: str | None = None, segment: int | None = None) -> bytes:
    """Return the tree overview of ``session`` as JSON bytes, built once per session state and query."""
    near = "" if around is None else hashlib.sha256(around.encode("utf-8", "surrogatepass")).hexdigest()
    key = state_key(f"tree:{VERSION}", session, session.leaf_seq, near, segment)
    return cached(key, lambda: json_bytes(build_tree_overview(session, around=around, segment=segment)), TTL)


def json_bytes(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # a label holding a lone surrogate: JSON escapes it
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()
