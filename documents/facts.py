"""What a readable export says beside the messages: the head's facts, and a system message's parts.

The facts are counted over the entries the document holds (a branch, or the whole tree it shows), the
way Pi's own export counts its file: messages by kind, tool calls, the models that answered, tokens and
cost. Pure: the adapters hand in payloads, and the costs they know by entry id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Facts",
    "SystemParts",
    "Tool",
    "ToolParameter",
    "carries_system_prompt",
    "gather",
    "message_cost",
    "money",
    "system_parts",
    "when",
]

_TOKEN_FIELDS = (("input", "input"), ("output", "output"), ("cacheRead", "cache read"),
                 ("cacheWrite", "cache write"))  # fmt: skip

# Message kinds in the order the head lists them, with their singular and plural names.
_KINDS = (
    ("user", "user", "user"),
    ("assistant", "assistant", "assistant"),
    ("toolResult", "tool result", "tool results"),
    ("bashExecution", "shell command", "shell commands"),
    ("custom", "custom message", "custom messages"),
    ("compaction", "compaction", "compactions"),
    ("branch_summary", "branch summary", "branch summaries"),
)


@dataclass(slots=True)
class Facts:
    """What the document's head says about the entries it holds."""

    models: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    tool_calls: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {name: 0 for name, _ in _TOKEN_FIELDS})
    cost: float = 0.0

    def messages_text(self) -> str:
        parts = []
        for key, one, many in _KINDS:
            count = self.counts.get(key, 0)
            if count:
                parts.append(f"{count:,} {one if count == 1 else many}")
        return ", ".join(parts) or "none"

    def tokens_text(self) -> str:
        parts = [f"{self.tokens[key]:,} {name}" for key, name in _TOKEN_FIELDS if self.tokens[key]]
        return " · ".join(parts) or "0"


def gather(entries: Iterable[Mapping[str, Any]], costs: Mapping[str, float]) -> Facts:
    """Count the facts of ``entries``; ``costs`` holds what piweb charged each assistant message."""
    facts = Facts()
    models: dict[str, None] = {}
    for entry in entries:
        kind = entry.get("type")
        if kind in ("compaction", "branch_summary"):
            facts.counts[kind] = facts.counts.get(kind, 0) + 1
        elif kind == "custom_message":
            facts.counts["custom"] = facts.counts.get("custom", 0) + 1
        message = entry.get("message")
        if kind != "message" or not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if isinstance(role, str) and role != "system":
            facts.counts[role] = facts.counts.get(role, 0) + 1
        if role != "assistant":
            continue
        model = _str(message.get("model"))
        if model:
            provider = _str(message.get("provider"))
            models[f"{provider}/{model}" if provider else model] = None
        content = message.get("content")
        if isinstance(content, list):
            facts.tool_calls += sum(
                1 for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"
            )
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            for key, _ in _TOKEN_FIELDS:
                facts.tokens[key] += _count(usage.get(key))
        facts.cost += message_cost(entry, costs) or 0.0
    facts.models = list(models)
    return facts


def message_cost(entry: Mapping[str, Any], costs: Mapping[str, float]) -> float | None:
    """Return an assistant message's cost: piweb's charge when given, else what Pi recorded (its total,
    or the sum of its parts when a session predates the total); None for anything else."""
    message = entry.get("message")
    if (
        entry.get("type") != "message"
        or not isinstance(message, Mapping)
        or message.get("role") != "assistant"
    ):
        return None
    charged = costs.get(_str(entry.get("id")))
    if charged is not None:
        return charged
    usage = message.get("usage")
    recorded = usage.get("cost") if isinstance(usage, Mapping) else None
    if not isinstance(recorded, Mapping):
        return 0.0
    total = _amount(recorded.get("total"))
    if total is not None:
        return total
    return sum(_amount(recorded.get(key)) or 0.0 for key, _ in _TOKEN_FIELDS)


def money(value: float) -> str:
    """Dollars as the session page writes them: cents for dollars, more digits for a message's fractions."""
    if value == 0:
        return "$0"
    size = abs(value)
    if size >= 100:
        return f"${value:,.0f}"
    if size >= 1:
        return f"${value:.2f}"
    if size >= 0.01:
        return f"${value:.3f}"
    if size >= 0.0001:
        return f"${value:.4f}"
    return "<$0.0001"


def when(timestamp: str) -> str:
    """An ISO time stamp as a reader's date in UTC (a saved page cannot know the reader's zone);
    anything unreadable is shown as it is."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return timestamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


# -- system messages ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolParameter:
    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: tuple[ToolParameter, ...]


@dataclass(frozen=True, slots=True)
class SystemParts:
    """A system message as a reader sees it: its text, its named sections (None: removed), the tools it
    adds with their parameters, and the names of the tools it removes."""

    text: str
    sections: tuple[tuple[str, str | None], ...]
    tools_added: tuple[Tool, ...]
    tools_removed: tuple[str, ...]


def system_parts(message: Mapping[str, Any]) -> SystemParts:
    """Split a system message into what the export shows. Pi 1.6 writes the prompt as named ``sections``
    with an empty ``content``, so the sections are the prompt."""
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(
            _str(b.get("text")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    else:
        text = _str(content)
    raw = message.get("sections")
    sections = (
        tuple((str(name), value if isinstance(value, str) else None) for name, value in raw.items())
        if isinstance(raw, Mapping)
        else ()
    )
    added = tuple(tool for tool in map(_tool, _list(message.get("toolsAdded"))) if tool is not None)
    removed = tuple(
        name
        for name in (
            _str(ref.get("name")) if isinstance(ref, Mapping) else _str(ref)
            for ref in _list(message.get("toolsRemoved"))
        )
        if name
    )
    return SystemParts(text=text, sections=sections, tools_added=added, tools_removed=removed)


def carries_system_prompt(entry: Mapping[str, Any]) -> bool:
    """Whether an entry sets the system prompt on its branch: a system message, or a compaction that
    kept a snapshot of it. A system message below one of these updates the prompt."""
    message = entry.get("message")
    if entry.get("type") == "message":
        return isinstance(message, Mapping) and message.get("role") == "system"
    return entry.get("type") == "compaction" and isinstance(entry.get("systemMessage"), Mapping)


def _tool(raw: Any) -> Tool | None:
    if not isinstance(raw, Mapping) or not _str(raw.get("name")):
        return None
    schema = raw.get("parameters")
    schema = schema if isinstance(schema, Mapping) else {}
    properties = schema.get("properties")
    required = {name for name in _list(schema.get("required")) if isinstance(name, str)}
    parameters = tuple(
        ToolParameter(
            name=str(name),
            type=_type_name(spec, 0),
            required=name in required,
            description=_str(spec.get("description")) if isinstance(spec, Mapping) else "",
        )
        for name, spec in (properties.items() if isinstance(properties, Mapping) else ())
    )
    return Tool(name=_str(raw.get("name")), description=_str(raw.get("description")), parameters=parameters)


def _type_name(spec: Any, depth: int) -> str:
    if not isinstance(spec, Mapping) or depth > 4:
        return "any"
    kind = spec.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind) or "any"
    # A union written as anyOf/oneOf names its members' types.
    options = _list(spec.get("anyOf")) or _list(spec.get("oneOf"))
    names = [_type_name(option, depth + 1) for option in options]
    return " | ".join(names) if names else "any"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return 0
    return int(min(value, 1e15))


def _amount(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) > 1e12:
        return None
    return float(value)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
