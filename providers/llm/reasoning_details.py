"""OpenAI-compatible ``reasoning_details``: the replay data some servers (OpenRouter) send beside reasoning.

They are kept as Pi keeps them: merged as they stream (consecutive text or summary pieces join into one
entry, encrypted entries stay whole), stored as the JSON text of the list in the thinking block's
``thinkingSignature``, and sent back as ``reasoning_details`` in place of the readable reasoning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pitree.jsjson import js_stringify

__all__ = ["append_detail", "is_detail", "replayed_details", "serialize_details"]

Detail = dict[str, Any]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_detail(value: Any) -> bool:
    """Whether ``value`` is one detail this client keeps (an unknown type or a malformed one is skipped)."""
    if not isinstance(value, Mapping):
        return False
    if value.get("id") is not None and not isinstance(value["id"], str):
        return False
    if "format" in value and not isinstance(value["format"], str):
        return False
    if "index" in value and not _is_number(value["index"]):
        return False
    kind = value.get("type")
    if kind == "reasoning.summary":
        return isinstance(value.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(value.get("data"), str)
    if kind == "reasoning.text":
        return isinstance(value.get("text"), str) and (
            value.get("signature") is None or isinstance(value["signature"], str)
        )
    return False


def _fill(target: Detail, source: Mapping[str, Any], key: str, *, when_falsy: bool = False) -> None:
    # An unset field takes the newer piece's value; a piece without one leaves the field out entirely.
    current = target.get(key)
    if (not current) if when_falsy else (current is None):
        if key in source:
            target[key] = source[key]
        else:
            target.pop(key, None)


def append_detail(details: list[Detail], detail: Mapping[str, Any]) -> None:
    """Add one streamed piece: text after text (and summary after summary) extends the last entry."""
    last = details[-1] if details else None
    kind = detail.get("type")
    if last is not None and kind == last.get("type") and kind in ("reasoning.text", "reasoning.summary"):
        field = "text" if kind == "reasoning.text" else "summary"
        last[field] += detail[field]
        if kind == "reasoning.text":
            _fill(last, detail, "signature", when_falsy=True)
        _fill(last, detail, "id")
        _fill(last, detail, "format", when_falsy=True)
        _fill(last, detail, "index")
        return
    details.append(dict(detail))


def serialize_details(details: Sequence[Mapping[str, Any]]) -> str:
    """The stored form: the list as JSON text, as JavaScript writes it."""
    return js_stringify(list(details))


def _parse(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def replayed_details(blocks: Sequence[Mapping[str, Any]]) -> list[Any] | None:
    """The details an assistant turn sends back: those of its first thinking block that holds a valid
    list, else the single encrypted entries older answers kept on their tool calls; None when neither."""
    for block in blocks:
        if block.get("type") == "thinking":
            parsed = _parse(block.get("thinkingSignature"))
            if isinstance(parsed, list) and parsed and all(is_detail(d) for d in parsed):
                return parsed
    legacy = []
    for block in blocks:
        if block.get("type") != "toolCall":
            continue
        parsed = _parse(block.get("thoughtSignature"))
        if (
            is_detail(parsed)
            and parsed["type"] == "reasoning.encrypted"
            and isinstance(parsed.get("id"), str)
            and parsed["id"]
            and parsed["data"]
        ):
            legacy.append(parsed)
    return legacy or None
