"""The request-side token estimate Pi's model layer uses to fit the output cap into the window.

It differs from the session-side estimate (``pitree.tokens``, 4 characters a token, which
decides compaction): the model layer counts 3.5 characters a token over the messages as sent (after
``convert_to_llm``), anchors on the last trusted usage, and counts the system prompt and tool changes of
system messages. Lengths are JavaScript string lengths (UTF-16 code units).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pitree.jsjson import js_stringify
from providers.llm.transcript import system_text

__all__ = ["estimate_request_tokens"]

CHARS_PER_TOKEN = 3.5
IMAGE_CHARS = 4800


def _length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _stringify(value: Any) -> str:
    """JSON as JavaScript writes it (``1e3`` counts as the four characters of ``1000``)."""
    try:
        return js_stringify(value)
    except (TypeError, ValueError):
        return "[unserializable]"


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return _length(content)
    chars = 0
    for block in content if isinstance(content, list) else ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            chars += _length(str(block.get("text") or ""))
        else:
            chars += IMAGE_CHARS
    return chars


def _message_tokens(message: Mapping[str, Any]) -> int:
    role = message.get("role")
    if role == "system":
        tools = 0
        for key in ("toolsAdded", "toolsRemoved"):
            if message.get(key):
                tools += _tokens(_length(_stringify(message[key])))
        return _tokens(_length(system_text(message))) + tools
    if role in ("user", "toolResult"):
        return _tokens(_content_chars(message.get("content")))
    chars = 0
    for block in message.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            chars += _length(str(block.get("text") or ""))
        elif block.get("type") == "thinking":
            chars += _length(str(block.get("thinking") or ""))
        else:
            chars += _length(str(block.get("name") or "")) + _length(_stringify(block.get("arguments")))
    return _tokens(chars)


def _usage_tokens(usage: Mapping[str, Any]) -> float:
    total = usage.get("totalTokens")
    if total:
        return float(total)
    return float(sum(usage.get(k) or 0 for k in ("input", "output", "cacheRead", "cacheWrite")))


def estimate_request_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Estimated input tokens: the last trusted usage plus what follows it, else every message.

    A usage counts when its answer did not fail and no message stamped later sits before it (a
    compaction summary inserted after the answer means the usage no longer describes the prefix).
    """
    latest = -math.inf
    anchor: tuple[int, float] | None = None
    for index, message in enumerate(messages):
        stamp = message.get("timestamp")
        stamp = float(stamp) if isinstance(stamp, int | float) else -math.inf
        if message.get("role") == "assistant":
            usage = message.get("usage")
            if (
                stamp >= latest
                and message.get("stopReason") not in ("aborted", "error")
                and isinstance(usage, Mapping)
                and _usage_tokens(usage) > 0
            ):
                anchor = (index, _usage_tokens(usage))
        latest = max(latest, stamp)
    if anchor is None:
        return sum(_message_tokens(m) for m in messages)
    index, used = anchor
    return math.ceil(used) + sum(_message_tokens(m) for m in messages[index + 1 :])
