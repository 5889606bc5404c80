"""What a user's activity list shows of an action-log row: pure rules, no Django.

Tokens are never written to the log, but a row's ``detail`` is free-form; the activity list is shown to
people other than staff, so it keeps only the keys known to be harmless and drops anything secret-shaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SECRET_MARKERS", "public_detail"]

# Any key containing one of these is dropped, whatever its value (a token's display prefix included:
# the tokens page shows it to its owner, and the activity list need not).
SECRET_MARKERS = (
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "credential",
    "cookie",
    "authorization",
    "email",
)
MAX_TEXT = 200  # a detail string longer than this is cut: the list is a summary, not an export


def _safe_key(key: str) -> bool:
    lowered = key.lower()
    return not any(marker in lowered for marker in SECRET_MARKERS)


def _shorten(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[: MAX_TEXT - 1] + "…"
    if isinstance(value, Mapping):
        return public_detail(value)
    if isinstance(value, list):
        return [_shorten(v) for v in value[:20]]
    return value


def public_detail(detail: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the parts of a log row's detail a non-staff reader may see."""
    if not isinstance(detail, Mapping):
        return {}
    return {str(k): _shorten(v) for k, v in detail.items() if _safe_key(str(k))}
