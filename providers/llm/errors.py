"""Error texts for failed provider calls, and which of them are worth retrying.

HTTP errors read as Pi stores them, because overflow detection (PI-FACTS §5.1) and the retry decision
match on the text, and a session written by piweb should read like one written by Pi:

- OpenAI-compatible: ``<status>: <the error object as compact JSON>``, e.g. ``400: {"message":…}``;
- Anthropic: ``<status> <the body as compact JSON>``;
- a body that is not JSON: ``<status> <body>``; no body: ``<status> status code (no body)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

MAX_ERROR_BODY = 4000

# A compact subset of Pi's overflow patterns: enough to keep overflow out of the retry loop.
_OVERFLOW = re.compile(
    r"prompt (?:is )?too long|request_too_large|exceeds the context window|maximum context length"
    r"|context[_ ]length[_ ]exceeded|context window exceeded|model_context_window_exceeded|too many tokens"
    r"|token limit exceeded|^[\w -]+ API error \(413\):|^413(?:\s|:|$)",
    re.IGNORECASE | re.ASCII,
)
_RATE_LIMIT = re.compile(r"rate limit|too many requests", re.IGNORECASE)
# Pi's classification of transient provider failures (pi-ai utils/retry), plus piweb's own wording for
# a stream that stopped before its end marker.
_NOT_RETRYABLE = re.compile(
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance"
    r"|insufficient_quota|out of budget|quota exceeded|billing|subscription_sharing_usage_limit_exceeded"
    r"|subscription_sharing_workplace_individual_usage_limit_exceeded|\"code\"\s*:\s*\"?1308(?![0-9])",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"overloaded|server_busy|servers are currently busy|currently experiencing high demand"
    r"|model is at capacity|rate.?limit|too many requests"
    r"|(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])"
    r"|service.?(?:is.?)?(?:temporarily.?)?unavailable|server.?error|internal.?error"
    r"|provider.?returned.?(?:an.?)?error|exceeded request buffer limit while retrying upstream"
    r"|unable to forward upstream|upstream.?request.?failed|upstream_stream_read_error"
    r"|stream was interrupted|http/?2 stream failed|network.?error|connection.?error|connection.?refused"
    r"|connection.?lost|connection.?closed|other side closed|fetch failed|request to \S+ failed, reason:"
    r"|getaddrinfo|(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])"
    r"|connection reset by peer|ENOTFOUND|EAI_AGAIN|upstream.?connect|reset before headers|socket hang up"
    r"|socket connection was closed|timed? out|timeout|terminated|websocket.?closed|websocket.?error"
    r"|websocket.?connection.?limit.?reached|ended without|stream ended before message_stop"
    r"|stream ended before a terminal response event|http2 request did not get a response"
    r"|stream disconnected before completion|cut short after the reply had begun"
    r"|pending stream has been canceled|stream ended unexpectedly",
    re.IGNORECASE,
)


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
    """Return True for failures a retry may fix: rate limits, overload, 5xx, dropped or stalled streams."""
    if message.get("stopReason") != "error":
        return False
    text = str(message.get("errorMessage") or "")
    if not text:
        return False
    if _OVERFLOW.search(text) and not _RATE_LIMIT.search(text):
        return False
    if _NOT_RETRYABLE.search(text):
        return False
    return bool(_TRANSIENT.search(text))
