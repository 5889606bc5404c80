"""Token accounting: provider usage where it can be trusted, a chars/4 estimate for the rest.

Lengths are UTF-16 units and tool arguments are measured as ``JSON.stringify`` writes them, so the
estimates equal Pi's to the token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pitree.jsjson import js_stringify, js_truthy, utf16_len
from pitree.projection import Projection

__all__ = [
    "ESTIMATED_IMAGE_CHARS",
    "ContextBreakdown",
    "SetAsideUsage",
    "TokenEstimate",
    "assistant_usage",
    "break_down_context",
    "calculate_context_tokens",
    "current_system_message",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "estimate_text_tokens",
    "estimate_tokens",
    "set_aside_usage",
]

ESTIMATED_IMAGE_CHARS = 4800


@dataclass(frozen=True, slots=True)
class TokenEstimate:
    tokens: float
    usage_tokens: float
    trailing_tokens: float
    last_usage_index: int | None


def _num(usage: Mapping[str, Any], key: str) -> float:
    """Return a usage counter as JavaScript adds it: a missing counter poisons the sum with NaN."""
    if key not in usage:
        return math.nan  # undefined + n is NaN
    value = usage[key]
    if value is None:
        return 0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return value
    return math.nan


def calculate_context_tokens(usage: Mapping[str, Any]) -> float:
    """Return ``totalTokens`` or, when it is 0 or missing, the sum of the four counters."""
    total = usage.get("totalTokens")
    if js_truthy(total) and isinstance(total, int | float):
        return total
    return sum(_num(usage, k) for k in ("input", "output", "cacheRead", "cacheWrite"))


def assistant_usage(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the usage of an assistant message that can anchor an estimate, else None."""
    if message.get("role") != "assistant":
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return None
    tokens = calculate_context_tokens(usage)
    return usage if tokens > 0 else None


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return utf16_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    chars += utf16_len(text)
            elif kind == "image":
                chars += ESTIMATED_IMAGE_CHARS
    return chars


def estimate_text_tokens(text: str) -> int:
    """Return ceil(chars / 4) for a piece of request text (a system prompt, tool definitions)."""
    return math.ceil(utf16_len(text) / 4)


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """Return ceil(chars / 4) for one agent message."""
    role = message.get("role")
    chars = 0
    if role in ("user", "custom", "toolResult"):
        chars = _content_chars(message.get("content"))
    elif role == "system":
        chars = _content_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, Mapping):
            for value in sections.values():
                if isinstance(value, str) and value:
                    chars += utf16_len(value)
        if "toolsAdded" in message and message.get("toolsAdded") is not None:
            chars += utf16_len(js_stringify(message.get("toolsAdded")))
    elif role == "assistant":
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                kind = block.get("type")
                if kind == "text" and isinstance(block.get("text"), str):
                    chars += utf16_len(block["text"])
                elif kind == "thinking" and isinstance(block.get("thinking"), str):
                    chars += utf16_len(block["thinking"])
                elif kind == "toolCall":
                    name = block.get("name")
                    chars += utf16_len(name) if isinstance(name, str) else 0
                    args = block.get("arguments")
                    if "arguments" in block:
                        chars += utf16_len(js_stringify(args))
    elif role == "bashExecution":
        for key in ("command", "output"):
            value = message.get(key)
            chars += utf16_len(value) if isinstance(value, str) else 0
    elif role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        chars = utf16_len(summary) if isinstance(summary, str) else 0
    return math.ceil(chars / 4)


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]]) -> TokenEstimate:
    """Return usage of the last trusted assistant message plus estimates of what follows it."""
    anchor = None
    for i in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[i])
        if usage is not None:
            anchor = (i, usage)
            break
    if anchor is None:
        total = sum(estimate_tokens(m) for m in messages)
        return TokenEstimate(total, 0, total, None)
    index, usage = anchor
    usage_tokens = calculate_context_tokens(usage)
    trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
    return TokenEstimate(usage_tokens + trailing, usage_tokens, trailing, index)


def current_system_message(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Replay the system messages in order into the one system prompt now in force."""
    system = [m for m in messages if m.get("role") == "system"]
    if not system:
        return None
    parts: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[str, Any] = {}
    for message in system:
        content = message.get("content")
        text = content if isinstance(content, str) else _text_of(content)
        if text:
            parts.append(text)
        raw_sections = message.get("sections")
        if isinstance(raw_sections, Mapping):
            for name, value in raw_sections.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        # A message's removals apply before its additions: a tool named in both stays, redefined.
        for ref in message.get("toolsRemoved") or []:
            name = ref.get("name") if isinstance(ref, Mapping) else ref
            tools.pop(str(name), None)
        for tool in message.get("toolsAdded") or []:
            if isinstance(tool, Mapping):
                tools[str(tool.get("name"))] = tool
    # The first system message that has a time stamps the prompt; with no time and no tools there is none.
    stamp = next((m["timestamp"] for m in system if m.get("timestamp") is not None), None)
    if stamp is None and not tools:
        return None
    out: dict[str, Any] = {
        "role": "system",
        "content": "\n\n".join(parts),
        "timestamp": 0 if stamp is None else stamp,
    }
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = list(tools.values())
    return out


def _text_of(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    # Text blocks of one system message are separate lines of the prompt.
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


@dataclass(frozen=True, slots=True)
class SetAsideUsage:
    """Usage a provider reported that the estimate no longer rests on, and the entry that made it stale."""

    tokens: float  # the context size that usage reported
    entry_id: str | None  # the assistant message that carried it
    reset_id: str | None  # the latest context_edit or compaction after it (None: not on the read path)
    reset_type: str | None


def _usage_position(projection: Projection, branch: Sequence[Any], index: int) -> tuple[str | None, int, int]:
    """Return the entry owning message ``index``, its position on ``branch`` and the last reset's."""
    owner = None
    count = 0
    for pe in projection.entries:
        count += len(pe.messages)
        if count > index:
            owner = pe.entry.id
            break
    usage_pos = -1
    last_reset = -1
    for i, entry in enumerate(branch):
        if usage_pos < 0 and owner is not None and entry.id == owner:
            usage_pos = i
        if entry.type in ("context_edit", "compaction"):
            last_reset = i
    return owner, usage_pos, last_reset


def estimate_projected_context_tokens(projection: Projection, branch: Sequence[Any]) -> TokenEstimate:
    """Return the estimate, distrusting usage recorded before the latest compaction or context edit."""
    messages = projection.messages
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None:
        _, usage_pos, last_reset = _usage_position(projection, branch, estimate.last_usage_index)
        if usage_pos >= 0 and usage_pos > last_reset:
            return estimate
    total = 0
    system = current_system_message(messages)
    if system is not None:
        total += estimate_tokens(system)
    total += sum(estimate_tokens(m) for m in messages if m.get("role") != "system")
    return TokenEstimate(total, 0, total, None)


def set_aside_usage(projection: Projection, branch: Sequence[Any]) -> SetAsideUsage | None:
    """Return the reported usage the estimate set aside (why the gauge can drop), or None.

    Pi trusts a reported usage only when no context edit or compaction came after it: an omitted failed
    attempt, for one, leaves the estimate to the messages' text, often far below the last report.
    """
    raw = estimate_context_tokens(projection.messages)
    if raw.last_usage_index is None:
        return None
    owner, usage_pos, last_reset = _usage_position(projection, branch, raw.last_usage_index)
    if usage_pos >= 0 and usage_pos > last_reset:
        return None
    reset = branch[last_reset] if last_reset >= 0 else None
    return SetAsideUsage(
        tokens=raw.usage_tokens,
        entry_id=owner,
        reset_id=reset.id if reset is not None else None,
        reset_type=reset.type if reset is not None else None,
    )


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """What a request spends of the window: the system prompt, the tool definitions and the messages."""

    system_prompt: int
    tools: int
    messages: float
    total: float
    from_usage: bool  # the total rests on the provider's reported usage


def break_down_context(
    estimate: TokenEstimate, *, system_prompt: int, tools: int, messages: int
) -> ContextBreakdown:
    """Split a context's tokens into the request's three parts, which always add up to the total.

    ``system_prompt`` and ``tools`` estimate what a request sends besides the conversation, and
    ``messages`` the conversation's own estimates (system messages excluded: they go out as the prompt).
    Usage the provider reported already counts the prompt and the tools, so with a trusted usage the
    messages are the rest of that total; without one the total is the sum of the three estimates.
    """
    if estimate.last_usage_index is None:
        return ContextBreakdown(system_prompt, tools, messages, system_prompt + tools + messages, False)
    rest = max(0, estimate.tokens - system_prompt - tools)
    return ContextBreakdown(system_prompt, tools, rest, system_prompt + tools + rest, True)
