"""The context window of a session's model, when the server knows that model, and the composer's models.

Sessions synced from Pi name their model (``model_change`` entries, assistant messages) but not its
window. A configured provider for the same provider and model id knows it.

Every context read and every session page asks; the providers change a few times a year. So each process
keeps the table, and a version in the shared cache, replaced whenever a provider is saved or deleted
(at once and again when the transaction commits, as the token epoch is), tells it when to read it again.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Mapping
from typing import Any

import redis
from django.core.cache import caches
from django.db import transaction

from providers.models import LLMProvider

__all__ = ["available_models", "context_window_for", "providers_changed"]

VERSION_KEY = "providers:version"
_FIELDS = (
    "pk",
    "name",
    "provider",
    "model_id",
    "context_window",
    "reasoning",
    "accepts_images",
    "is_summarizer_default",
)

_lock = threading.Lock()
_held: tuple[str, list[dict[str, Any]]] | None = None  # (version, rows in the picker's order)


def _version() -> str | None:
    """Return the shared version of the providers' table, starting one if there is none; None if unknown."""
    cache = caches["shared"]
    try:
        value = cache.get(VERSION_KEY)
        if value is None:
            cache.add(VERSION_KEY, secrets.token_hex(8), None)
            value = cache.get(VERSION_KEY)
    except (OSError, redis.RedisError):  # the shared cache is down: read the table every time
        return None
    return None if value is None else str(value)


def _rows() -> list[dict[str, Any]]:
    """Return the providers in the picker's order (the summarizer default first, then by name)."""
    global _held
    version = _version()
    held = _held
    if version is not None and held is not None and held[0] == version:
        return held[1]
    rows = list(LLMProvider.objects.order_by("-is_summarizer_default", "name").values(*_FIELDS))
    # Inside a transaction the rows may be ones that are never committed: used, not kept.
    if version is not None and not transaction.get_connection().in_atomic_block:
        with _lock:
            _held = (version, rows)
    return rows


def _new_version() -> None:
    # With the shared cache down every process reads the table anyway (_version() answers None).
    with contextlib.suppress(OSError, redis.RedisError):
        caches["shared"].set(VERSION_KEY, secrets.token_hex(8), None)


def providers_changed(**_: Any) -> None:
    """Make every process read the providers again, now and once the current transaction commits."""
    global _held
    _held = None
    _new_version()
    transaction.on_commit(_new_version, robust=True)


def context_window_for(model: Mapping[str, Any] | None) -> int | None:
    """Return the configured window for ``{"provider", "modelId"}``, else None."""
    if not isinstance(model, Mapping):
        return None
    provider, model_id = model.get("provider"), model.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        return None
    rows = sorted((row for row in _rows() if row["model_id"] == model_id), key=lambda row: row["pk"])
    # The same model id under the session's provider label first, then under any label.
    exact = next((row["context_window"] for row in rows if row["provider"] == provider), None)
    return exact or next((row["context_window"] for row in rows), None)


def available_models() -> list[dict[str, Any]]:
    """Return the configured model providers for the composer's picker (none when runs are not offered)."""
    return [
        {
            "id": row["pk"],
            "name": row["name"],
            "provider": row["provider"],
            "modelId": row["model_id"],
            "contextWindow": row["context_window"],
            "reasoning": row["reasoning"],
            "acceptsImages": row["accepts_images"],
        }
        for row in _rows()
    ]
