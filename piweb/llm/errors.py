"""Error texts for failed provider calls, and which of them are worth retrying.

Texts keep the provider's own wording because overflow detection (PI-FACTS §5.1) matches on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_MAX_BODY = 2000

# A compact subset of Pi's overflow patterns: enough to keep overflow out of the retry loop.
_OVERFLOW = re.compile(
    r"prompt (?:is )?too long|request_too_large|exceeds the context window|maximum context length"
    r"|context[_ ]length[_ ]exceeded|context window exceeded|model_context_window_exceeded|too many tokens"
    r"|token limit exceeded|^[\w -]+ API error \(413\):",
    re.IGNORECASE | re.ASCII,
)
_RATE_LIMIT = re.compile(r"rate limit|too many requests", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"API error \((?:408|429|5\d\d)\)|overloaded|rate limit|too many requests|service unavailable"
    r"|connection error|stream ended unexpectedly|timed out",
    re.IGNORECASE | re.ASCII,
)


def format_http_error(label: str, status: int, body: str) -> str:
    """Return ``"<label> API error (<status>): <message>"`` using the provider's own message."""
    text = body.strip()[:_MAX_BODY] or "(no body)"
    if status == 413:
        # Keep the whole body: the error type (request_too_large) is what overflow detection matches.
        return f"{label} API error ({status}): {text}"
    return f"{label} API error ({status}): {_body_message(text)}"


def _body_message(text: str) -> str:
    try:
        payload = json.loads(text)
    except ValueError:
        return text
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return payload["message"]
    return text


def is_transient_error(message: Mapping[str, Any]) -> bool:
    """Return True for failures a retry may fix: rate limits, overload, 5xx, dropped or stalled streams."""
    if message.get("stopReason") != "error":
        return False
    text = str(message.get("errorMessage") or "")
    if _OVERFLOW.search(text) and not _RATE_LIMIT.search(text):
        return False
    return bool(_TRANSIENT.search(text))
