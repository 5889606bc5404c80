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


# What Pi's HTTP client (Node's fetch, through the providers' SDKs, which add "Connection error." and
# the deepest cause) reports when the server closes the connection: before the response ("other side
# closed"), or in the body of a response that was to close the connection, when the body's declared end
# (chunked or sized) was not reached.
_CLOSED_BEFORE_RESPONSE = "Connection error.: other side closed (UND_ERR_SOCKET)"
_CLOSED_IN_BODY = "terminated: Response does not match the HTTP/1.1 protocol (Invalid EOF state)"
# ...and in the body of a response that was to keep the connection open.
_CLOSED_MID_RESPONSE = "terminated: other side closed (UND_ERR_SOCKET)"
# What the SDKs keep of an error response whose body could not be read: the reader's message alone.
UNREADABLE_ERROR_BODY = "terminated"


def transport_error_text(
    label: str,
    kind: str,
    detail: str,
    *,
    responded: bool,
    errno: str | None = None,
    peer: str = "",
    keep_alive: bool = False,
    framed: bool = True,
) -> str | None:
    """Return the stored text of a connection failure, in Pi's words where Pi's client meets the same.

    ``kind`` and ``detail`` name the client's exception and ``errno`` its system error (``ECONNREFUSED``,
    ``ECONNRESET``); ``responded`` says whether the status line had arrived, ``peer`` is the address
    connected to (``host:port``). Of the response: ``keep_alive`` whether the connection was to stay
    open after it, ``framed`` whether its body has a declared end (chunked or a length). None means
    Node's client reads the failure as the body's clean end.
    """
    reset = f"{'write' if kind == 'WriteError' else 'read'} ECONNRESET"
    if not responded:
        if errno == "ECONNREFUSED":
            return f"Connection error.: connect ECONNREFUSED {peer}"
        if errno == "ECONNRESET":
            return f"Connection error.: {reset}"
        if kind == "RemoteProtocolError":
            return _CLOSED_BEFORE_RESPONSE
    elif kind == "RemoteProtocolError" or errno == "ECONNRESET":
        if keep_alive:
            return f"terminated: {reset}" if errno == "ECONNRESET" else _CLOSED_MID_RESPONSE
        # A response that closes its connection ends with it, reset or closed: cleanly, unless its body
        # promised more.
        return _CLOSED_IN_BODY if framed else None
    return f"{label} connection error: {kind}: {detail}"
