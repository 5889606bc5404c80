"""Shared pieces of the sessiontool commands: loading a case file and shaping values like Pi's oracle."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pitree.jsjson import js_truthy, utf16_len
from pitree.projection import Projection
from pitree.session import LoadedSession, load_session
from pitree.tokens import TokenEstimate, estimate_tokens

__all__ = ["NotASession", "estimate_view", "js_value", "load_case", "message_view", "split_leaf_option"]


class NotASession(Exception):
    """The file does not load as a Pi session."""


def load_case(path: str) -> LoadedSession:
    """Load a session file; raise NotASession with Pi's message when it is not one."""
    data = Path(path).read_bytes()
    session = load_session(data.decode("utf-8", errors="replace"))
    if not session.file.valid and data:
        raise NotASession(f"Session file is not a valid pi session: {path}")
    return session


def js_value(value: Any) -> Any:
    """Replace NaN by the "NaN" marker the oracle prints."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_ROLE_KEYS: dict[str, tuple[str, ...]] = {
    "user": ("content", "timestamp"),
    "assistant": ("content", "provider", "model", "stopReason", "errorMessage", "usage", "timestamp"),
    "toolResult": ("toolCallId", "toolName", "content", "isError", "timestamp"),
    "system": ("content", "sections", "toolsAdded", "toolsRemoved", "timestamp"),
    "custom": ("customType", "content", "display", "details", "timestamp"),
    "bashExecution": (
        "command",
        "output",
        "exitCode",
        "cancelled",
        "truncated",
        "fullOutputPath",
        "excludeFromContext",
        "timestamp",
    ),
    "branchSummary": ("summary", "fromId", "timestamp"),
    "compactionSummary": ("summary", "tokensBefore", "timestamp"),
}
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _block_view(block: Any) -> Any:
    """Show a content block as the conformance format does: no signatures, images by size."""
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        keys: tuple[str, ...] = ("type", "text")
    elif kind == "thinking":
        keys = ("type", "thinking", "redacted") if js_truthy(block.get("redacted")) else ("type", "thinking")
    elif kind == "toolCall":
        keys = ("type", "id", "name", "arguments")
    elif kind == "image":
        data = block.get("data")
        image = (
            {"type": "image", "mimeType": block.get("mimeType")} if "mimeType" in block else {"type": "image"}
        )
        return {**image, "dataLength": utf16_len(data) if isinstance(data, str) else 0}
    else:
        return block
    view = {k: block[k] for k in keys if k in block}
    if "redacted" in keys:
        view["redacted"] = True
    return view


def _content_view(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [_block_view(block) for block in content]


def message_view(message: dict[str, Any], source: str | None, *, with_tokens: bool = True) -> dict[str, Any]:
    """Shape one projected message the way the conformance outputs show it."""
    out: dict[str, Any] = {"source": source}
    if with_tokens:
        out["tokens"] = estimate_tokens(message)
    role = message.get("role")
    out["role"] = role
    for key in _ROLE_KEYS.get(str(role), ("content", "timestamp")):
        if key not in message:
            continue
        value = message[key]
        if key == "content":
            value = _content_view(value)
        elif key in ("toolsAdded", "toolsRemoved") and isinstance(value, list):
            value = [t.get("name") if isinstance(t, dict) else t for t in value]
        elif key == "usage" and isinstance(value, dict):
            value = {k: value[k] for k in _USAGE_KEYS if k in value}
        out[key] = js_value(value)
    return out


def llm_view(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.get("role"), "content": _content_view(message.get("content"))}
    if message.get("role") == "toolResult":
        out["toolCallId"] = message.get("toolCallId")
    return out


def estimate_view(estimate: TokenEstimate) -> dict[str, Any]:
    return {
        "tokens": js_value(estimate.tokens),
        "usageTokens": js_value(estimate.usage_tokens),
        "trailingTokens": js_value(estimate.trailing_tokens),
        "lastUsageIndex": estimate.last_usage_index,
    }


def projection_messages(projection: Projection) -> list[dict[str, Any]]:
    return [message_view(m, pe.entry.id) for pe in projection.entries for m in pe.messages]


def split_leaf_option(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """Split ``--name=value`` options from positional arguments."""
    positional: list[str] = []
    options: dict[str, str] = {}
    for arg in args:
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg[2:].partition("=")
            options[name] = value
        else:
            positional.append(arg)
    return positional, options
