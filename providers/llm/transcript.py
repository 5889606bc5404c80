"""What a request carries from the transcript's system messages: the prompt, later updates and the tools.

Pi 1.6 stores its system prompt as ``system`` messages: ``content`` (often empty) plus named
``sections``, with the tool set as ``toolsAdded`` / ``toolsRemoved``. A provider receives:

- the prompt: the first system message's text, then each section value in key order, empty parts
  dropped, joined by a blank line;
- later system messages: for providers that accept system messages mid-conversation, an update in
  place that gives its text and names each section it changes or removes; for the others (Pi's default
  for both wire formats here) every system message is replayed into the one leading prompt;
- the tools in force (added minus removed, in order) as the request's tool definitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.llm.messages import text_of
from providers.llm.types import Message, ToolSpec

__all__ = ["Transcript", "current_system", "current_tools", "split_transcript", "system_text", "update_text"]


@dataclass(frozen=True, slots=True)
class Transcript:
    system: str | None  # the leading prompt, or None when there is none
    tools: list[ToolSpec]
    messages: list[Message]  # the conversation; in-place updates are ``{"role": "system", "content": str}``


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_of([b for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)])
    return ""


def system_text(message: Mapping[str, Any]) -> str:
    """The full prompt of one system message: its text, then its sections."""
    parts = [_content_text(message.get("content"))]
    sections = message.get("sections")
    if isinstance(sections, Mapping):
        parts.extend(v for v in sections.values() if isinstance(v, str))
    return "\n\n".join(p for p in parts if p)


def update_text(message: Mapping[str, Any]) -> str:
    """A later system message as sent in place: its text, then each section it sets or removes, by name."""
    parts = []
    text = _content_text(message.get("content"))
    if text:
        parts.append(text)
    sections = message.get("sections")
    for name, value in sections.items() if isinstance(sections, Mapping) else ():
        if value is None:
            parts.append(f'The system prompt section "{name}" no longer applies.')
        elif isinstance(value, str):
            parts.append(f'The system prompt section "{name}" now reads:\n\n{value}')
    return "\n\n".join(parts)


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, Mapping):
        name = tool.get("name")
        return name if isinstance(name, str) else None
    return tool if isinstance(tool, str) else None


def current_tools(messages: Sequence[Mapping[str, Any]]) -> list[ToolSpec]:
    """The tools in force after every system message: per message removals, then additions."""
    tools: dict[str, Mapping[str, Any]] = {}
    for message in messages:
        if message.get("role") != "system":
            continue
        for ref in message.get("toolsRemoved") or []:
            tools.pop(_tool_name(ref) or "", None)
        for tool in message.get("toolsAdded") or []:
            name = _tool_name(tool)
            if name is not None and isinstance(tool, Mapping):
                tools[name] = tool  # a redefinition keeps its place, as a Map set does
    return [
        ToolSpec(
            name=name,
            description=str(tool.get("description") or ""),
            parameters=_parameters(tool),
        )
        for name, tool in tools.items()
    ]


def current_system(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Replay every system message into one: text pieces joined by a blank line, sections merged."""
    system = [m for m in messages if m.get("role") == "system"]
    if not system:
        return None
    content: list[str] = []
    sections: dict[str, str] = {}
    for message in system:
        text = _content_text(message.get("content"))
        if text:
            content.append(text)
        raw = message.get("sections")
        for name, value in raw.items() if isinstance(raw, Mapping) else ():
            if value is None:
                sections.pop(name, None)
            elif isinstance(value, str):
                sections[name] = value
    return {"role": "system", "content": "\n\n".join(content), "sections": sections}


def split_transcript(messages: Sequence[Mapping[str, Any]], *, in_place: bool = False) -> Transcript:
    """Separate the prompt and tools from the conversation, as Pi does for the provider's abilities.

    ``in_place``: the provider accepts system messages mid-conversation, so a system message that
    opens the transcript is the prompt and later ones stay where they are as updates. Tools are
    always the current set (the wire formats here cannot add tools mid-conversation).
    """
    tools = current_tools(messages)
    if not in_place:
        head = current_system(messages)
        prompt = system_text(head) if head is not None else ""
        rest = [dict(m) for m in messages if m.get("role") != "system"]
        return Transcript(prompt or None, tools, rest)
    prompt = ""
    out: list[Message] = []
    for index, message in enumerate(messages):
        if message.get("role") != "system":
            out.append(dict(message))
        elif index == 0:
            prompt = system_text(message)
        elif text := update_text(message):
            out.append({"role": "system", "content": text})
    return Transcript(prompt or None, tools, out)


def _parameters(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    parameters = tool.get("parameters")
    return parameters if isinstance(parameters, Mapping) else {}
