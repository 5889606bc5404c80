"""What one entry says about Pi's tools, for the index of work: the calls it asks for, the result it gives.

A session's tool uses are indexed as they are stored (``sessions_app.services.tool_index``), one entry at
a time, so "sessions that touched this path" is a lookup rather than a walk over every session. The rules
are the Files panel's (``pitree.files``):

- a call counts once its result is stored (an assistant ``toolCall`` block, then a ``toolResult`` with
  the same ``toolCallId``); a result with ``isError: true`` of ``read``, ``edit`` or ``write`` changed
  nothing and is no touch; a failed ``bash`` command still ran, and is found by its command;
- only ``read``, ``edit`` and ``write`` touch a path (``bash`` may change any file; no record says which);
  every other tool is indexed by its name alone;
- a command the user ran (``!command``: a ``bashExecution`` message) is a ``bash`` use of its own entry;
- a ``context_edit`` that omits a result from the model's context does not undo the tool's work.

Paths are normalized as the Files panel does (``files.normalize_path``) and stored both as shown
(relative to the session's folder when inside it) and absolute.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pitree.files import normalize_path

__all__ = [
    "PATH_TOOLS",
    "ToolCall",
    "ToolResult",
    "UserCommand",
    "calls_of",
    "says_anything",
    "shown_path",
    "tool_facts",
]

PATH_TOOLS = frozenset({"read", "edit", "write"})
MAX_TOOL_CHARS = 200  # a tool name past this is not a name any tool has; kept cut
MAX_COMMAND_CHARS = 4000  # the start of a long command (a heredoc) is what a search looks for
MAX_PATH_CHARS = 4000
# What a database text column cannot hold: NUL and lone UTF-16 surrogates (JSON allows both).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _storable(text: str, limit: int) -> str:
    text = text[:limit]
    return _UNSTORABLE.sub(" ", text) if not text.isascii() or "\x00" in text else text


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an assistant message asks for; ``path`` is the raw argument ("" when none)."""

    call_id: str
    tool: str
    path: str
    command: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result: which call it answers and whether the tool said it failed."""

    call_id: str
    failed: bool


@dataclass(frozen=True, slots=True)
class UserCommand:
    """A command the user ran in Pi (``!command``)."""

    command: str


Facts = tuple[list[ToolCall], ToolResult | None, UserCommand | None]
_NONE: Facts = ([], None, None)


def tool_facts(value: Any) -> Facts:
    """Return the entry's tool calls, its tool result and its user command (each may be absent)."""
    if not isinstance(value, Mapping) or value.get("type") != "message":
        return _NONE
    message = value.get("message")
    if not isinstance(message, Mapping) or not isinstance(value.get("id"), str):
        return _NONE
    role = message.get("role")
    if role == "assistant":
        calls = calls_of(message)
        return (calls, None, None) if calls else _NONE
    if role == "toolResult":
        call_id = message.get("toolCallId")
        if isinstance(call_id, str) and call_id:
            return [], ToolResult(_storable(call_id, MAX_TOOL_CHARS), message.get("isError") is True), None
        return _NONE
    if role == "bashExecution" and isinstance(message.get("command"), str):
        return [], None, UserCommand(_storable(message["command"], MAX_COMMAND_CHARS))
    return _NONE


def says_anything(facts: Facts) -> bool:
    """Whether an entry's facts name a call, a result or a user command (most entries name none)."""
    calls, result, command = facts
    return bool(calls) or result is not None or command is not None


def calls_of(message: Mapping[str, Any]) -> list[ToolCall]:
    """Return the tool calls of an assistant message, in order."""
    content = message.get("content")
    calls: list[ToolCall] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping) or block.get("type") != "toolCall":
            continue
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("arguments")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            continue
        args = arguments if isinstance(arguments, Mapping) else {}
        path = args.get("path") if name in PATH_TOOLS else None
        command = args.get("command") if name == "bash" else None
        calls.append(
            ToolCall(
                _storable(call_id, MAX_TOOL_CHARS),
                _storable(name, MAX_TOOL_CHARS),
                _storable(path, MAX_PATH_CHARS) if isinstance(path, str) and path.strip() else "",
                _storable(command, MAX_COMMAND_CHARS) if isinstance(command, str) else "",
            )
        )
    return calls


def shown_path(path: str, cwd: str) -> tuple[str, str]:
    """Return (shown, absolute) for a tool's ``path`` argument: shown relative to ``cwd`` when inside it,
    as the Files panel shows it; ("", "") for no path."""
    if not path:
        return "", ""
    absolute = normalize_path(path, cwd)
    if cwd and absolute.startswith("/"):
        base = posixpath.normpath(cwd)
        prefix = base.rstrip("/") + "/"
        if absolute.startswith(prefix):
            return absolute[len(prefix) :], absolute
    return absolute, absolute
