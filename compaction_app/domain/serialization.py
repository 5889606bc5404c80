"""Flatten model-facing messages into the plain transcript a summarizer reads.

Each message becomes one ``[Role]: text`` part and parts are separated by a blank line. System
messages and thinking are left out; long tool results are cut so one log cannot crowd out the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pitree.jsjson import is_array_index, js_stringify, utf16_len
from pitree.messages import content_text

__all__ = ["TOOL_RESULT_MAX_CHARS", "serialize_conversation", "slice_head", "truncate_tool_result"]

TOOL_RESULT_MAX_CHARS = 2000


def slice_head(text: str, limit: int) -> str:
    """Return the first ``limit`` UTF-16 units of ``text``; one fewer if a surrogate pair would split."""
    if utf16_len(text) <= limit:
        return text
    units = text.encode("utf-16-le", errors="surrogatepass")
    end = limit
    last = int.from_bytes(units[2 * (end - 1) : 2 * end], "little")
    if 0xD800 <= last <= 0xDBFF:
        end -= 1
    return units[: 2 * end].decode("utf-16-le", errors="surrogatepass")


def truncate_tool_result(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Cut a tool result to ``limit`` UTF-16 units and say how much was dropped."""
    length = utf16_len(text)
    if length <= limit:
        return text
    return f"{slice_head(text, limit)}\n\n[... {length - limit} more characters truncated]"


def _argument_items(arguments: Any) -> list[tuple[str, Any]]:
    """Return the entries of an arguments object in ``Object.entries`` order (integer-like keys first)."""
    if not isinstance(arguments, Mapping):
        return []
    keys = [str(k) for k in arguments]
    index_keys = sorted((k for k in keys if is_array_index(k)), key=int)
    ordered = index_keys + [k for k in keys if not is_array_index(k)]
    return [(k, arguments[k]) for k in ordered]


def _format_call(block: Mapping[str, Any]) -> str:
    args = ", ".join(f"{key}={js_stringify(value)}" for key, value in _argument_items(block.get("arguments")))
    name = block.get("name")
    return f"{name if isinstance(name, str) else ''}({args})"


def _serialize_assistant(message: Mapping[str, Any], parts: list[str]) -> None:
    content = message.get("content")
    if not isinstance(content, list):
        return
    blocks = [b for b in content if isinstance(b, Mapping)]
    texts = [b for b in blocks if b.get("type") == "text"]
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if texts:
        text = "\n".join(t["text"] if isinstance(t.get("text"), str) else "" for t in texts)
        parts.append(f"[Assistant]: {text}")
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(_format_call(c) for c in calls))


def serialize_conversation(llm_messages: Sequence[Mapping[str, Any]]) -> str:
    """Return the transcript of converted (model-facing) messages, parts joined by a blank line."""
    parts: list[str] = []
    for message in llm_messages:
        role = message.get("role")
        if role == "user":
            text = content_text(message.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            _serialize_assistant(message, parts)
        elif role == "toolResult":
            text = content_text(message.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {truncate_tool_result(text)}")
    return "\n\n".join(parts)
