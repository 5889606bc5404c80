"""Which failed assistant turns Pi 1.6.0 retries as they are (pi-ai ``isRetryableAssistantError``).

The decision rests on the stored error text only: an error stop whose text names an exhausted quota,
budget or plan is final (the same request would fail again, and each attempt is paid); otherwise it is
retried when the text names a transient provider or transport failure. Overflow is decided apart by
the caller, as Pi does. The regexes keep their JavaScript spelling (case-insensitive).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from pitree.jsregex import compile_js

__all__ = ["is_retryable_assistant_error"]

# Account limits reported like throttling (often as 429): they reset after hours, or never.
_FINAL: Final = (
    r"GoUsageLimitError",
    r"FreeUsageLimitError",
    r"Monthly usage limit reached",
    r"available balance",
    r"insufficient_quota",
    r"out of budget",
    r"quota exceeded",
    r"billing",
    r"subscription_sharing_usage_limit_exceeded",
    r"subscription_sharing_workplace_individual_usage_limit_exceeded",
    r'"code"\s*:\s*"?1308(?![0-9])',
)

_TRANSIENT: Final = (
    # load, throttling and server-side statuses (a status code must stand alone, not inside an id)
    r"overloaded",
    r"server_busy",
    r"servers are currently busy",
    r"currently experiencing high demand",
    r"model is at capacity",
    r"rate.?limit",
    r"too many requests",
    r"(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])",
    r"service.?(?:is.?)?(?:temporarily.?)?unavailable",
    r"server.?error",
    r"internal.?error",
    # gateways relaying an upstream failure
    r"provider.?returned.?(?:an.?)?error",
    r"exceeded request buffer limit while retrying upstream",
    r"unable to forward upstream",
    r"upstream.?request.?failed",
    r"upstream_stream_read_error",
    r"stream was interrupted",
    r"http/?2 stream failed",
    # network and transport
    r"network.?error",
    r"connection.?error",
    r"connection.?refused",
    r"connection.?lost",
    r"connection.?closed",
    r"other side closed",
    r"fetch failed",
    r"request to \S+ failed, reason:",
    r"getaddrinfo",
    r"(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])",
    r"connection reset by peer",
    r"ENOTFOUND",
    r"EAI_AGAIN",
    r"upstream.?connect",
    r"reset before headers",
    r"socket hang up",
    r"socket connection was closed",
    r"timed? out",
    r"timeout",
    r"terminated",
    r"websocket.?closed",
    r"websocket.?error",
    r"websocket.?connection.?limit.?reached",
    # streams that ended early
    r"ended without",
    r"stream ended before message_stop",
    r"stream ended before a terminal response event",
    r"http2 request did not get a response",
    r"stream disconnected before completion",
    r"cut short after the reply had begun",
    r"pending stream has been canceled",
    # the provider itself asks for a retry
    r"retry delay",
    r"you can retry your request",
    r"try your request again",
    r"please retry your request",
    r"ResourceExhausted",
    r"subscription_sharing_usage_unavailable",
    r"subscription_sharing_user_unavailable",
)

# One alternation each, as Pi tests them.
_FINAL_RE: Final[re.Pattern[str]] = compile_js("|".join(_FINAL))
_TRANSIENT_RE: Final[re.Pattern[str]] = compile_js("|".join(_TRANSIENT))


def is_retryable_assistant_error(message: Mapping[str, object]) -> bool:
    """Return whether an error stop looks transient by its text, and names no exhausted account limit."""
    text = message.get("errorMessage")
    if message.get("stopReason") != "error" or not isinstance(text, str) or not text:
        return False
    if _FINAL_RE.search(text):
        return False
    return _TRANSIENT_RE.search(text) is not None
