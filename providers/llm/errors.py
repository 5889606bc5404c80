"""Error texts for failed provider calls, and which of them are worth retrying.

HTTP errors read as Pi stores them, because overflow detection (PI-FACTS §5.1) and the retry decision
match on the text, and a session written by piweb should read like one written by Pi:

- OpenAI-compatible: ``<status>: <the error object as compact JSON>``, e.g. ``400: {"message":…}``;
- Anthropic: ``<status> <the body as compact JSON>``;
- a body that is not JSON: ``<status> <body>``; no body: ``<status> status code (no body)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pitree.retryable import is_retryable_assistant_error

MAX_ERROR_BODY = 4000


def _compact(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _truncate(text: str) -> str:
    if len(text) <= MAX_ERROR_BODY:
        return text
    return f"{text[:MAX_ERROR_BODY]}... [truncated {len(text) - MAX_ERROR_BODY} chars]"


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _sdk_message(status: int, error: Any, fallback: str) -> str:
    """``<status> <message>``: the error's ``message``, else the error as JSON, else the raw text."""
    message = error.get("message") if isinstance(error, Mapping) else None
    if message:
        text = message if isinstance(message, str) else _compact(message)
    elif error is not None and error != "" and error != {} and error != []:
        text = _compact(error)
    else:
        text = fallback
    return f"{status} {text}" if text else f"{status} status code (no body)"


def format_http_error(label: str, status: int, body: str) -> str:
    """Return the stored text of an HTTP error, as Pi writes it for the same response."""
    text = body.strip()
    payload = _parse(text) if text else None
    parsed = payload is not None or text == "null"
    if label == "Anthropic":
        return _sdk_message(status, payload, "" if parsed else text)
    error = payload.get("error") if isinstance(payload, Mapping) else None
    message = _sdk_message(status, error, "" if parsed else text)
    if isinstance(error, Mapping) and error:
        detail = _truncate(_compact(error))
        if detail not in message:
            return f"{status}: {detail}"
    return message


def is_transient_error(message: Mapping[str, Any]) -> bool:
    """Return True for failures Pi retries as they are: rate limits, overload, 5xx, dropped or stalled
    streams, but never an exhausted quota or budget (pi-ai's rule, which Pi's summaries retry by)."""
    return is_retryable_assistant_error(message)


# What Pi's HTTP client (Node's fetch) reports when the server closes the connection: before the
# response ("other side closed"), or in a chunked body that then cannot end.
_CLOSED_BEFORE_RESPONSE = "Connection error.: other side closed (UND_ERR_SOCKET)"
_CLOSED_IN_BODY = "terminated: Response does not match the HTTP/1.1 protocol (Invalid EOF state)"


def transport_error_text(label: str, kind: str, detail: str, *, responded: bool) -> str:
    """Return the stored text of a connection failure, in Pi's words where Pi's client meets the same.

    ``kind`` and ``detail`` name the client's exception; ``responded`` says whether the status line
    had arrived.
    """
    if kind == "RemoteProtocolError" and not responded:
        return _CLOSED_BEFORE_RESPONSE
    if kind == "RemoteProtocolError" and "incomplete chunked read" in detail:
        return _CLOSED_IN_BODY
    return f"{label} connection error: {kind}: {detail}"
