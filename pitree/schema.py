"""The shapes of Pi 1.6.0's session lines (JSONL v3), as types.

A stored line is kept verbatim whatever it holds, and loading is tolerant (a field may be missing or of
another type on a hand-edited or older file), so every field but ``type`` is optional here: the types say
what a field holds when it is there, and readers still check. ``Entry.as_*`` (``pitree.entries``) give a
line as one of these when its ``type`` says so; unknown types stay plain mappings and round-trip.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

__all__ = [
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionEntry",
    "CompactionSummaryMessage",
    "ContentBlock",
    "ContextEditEntry",
    "Cost",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "ImageContent",
    "LabelEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "PiEntry",
    "PiMessage",
    "SessionHeader",
    "SessionInfoEntry",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UsageEntry",
    "UserMessage",
]


# -- content blocks ------------------------------------------------------------------------------------


class TextContent(TypedDict, total=False):
    type: Required[Literal["text"]]
    text: str
    textSignature: str  # provider metadata, opaque


class ImageContent(TypedDict, total=False):
    type: Required[Literal["image"]]
    data: str  # base64
    mimeType: str


class ThinkingContent(TypedDict, total=False):
    type: Required[Literal["thinking"]]
    thinking: str
    thinkingSignature: str
    redacted: bool


class ToolCall(TypedDict, total=False):
    type: Required[Literal["toolCall"]]
    id: str
    name: str
    arguments: dict[str, Any]
    thoughtSignature: str
    namespace: str


ContentBlock = TextContent | ImageContent | ThinkingContent | ToolCall


# -- usage ---------------------------------------------------------------------------------------------


class Cost(TypedDict, total=False):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float


class Usage(TypedDict, total=False):
    input: int
    output: int  # includes reasoning
    cacheRead: int
    cacheWrite: int
    cacheWrite1h: int  # the part of cacheWrite kept for an hour
    reasoning: int
    totalTokens: int
    cost: Cost


# -- messages (an entry's ``message``) -----------------------------------------------------------------


class UserMessage(TypedDict, total=False):
    role: Required[Literal["user"]]
    content: str | list[TextContent | ImageContent]
    timestamp: int  # milliseconds


class AssistantMessage(TypedDict, total=False):
    role: Required[Literal["assistant"]]
    content: list[TextContent | ThinkingContent | ToolCall]
    api: str
    provider: str
    model: str
    responseModel: str
    responseId: str
    providerThinkingLevel: str
    thinkingLevel: str
    diagnostics: list[Any]
    usage: Usage
    stopReason: str  # "stop", "length", "toolUse", "error", "aborted", "deferred"
    deferred: dict[str, Any]
    errorMessage: str
    rawStopReason: str
    endTurn: bool
    timestamp: int


class ToolResultMessage(TypedDict, total=False):
    role: Required[Literal["toolResult"]]
    toolCallId: str
    toolName: str
    content: list[TextContent | ImageContent]
    details: Any
    usage: Usage  # nested model work of the tool
    nestedCalls: dict[str, Any]
    isError: bool
    timestamp: int


class SystemMessage(TypedDict, total=False):
    role: Required[Literal["system"]]
    content: str | list[TextContent]
    sections: dict[str, str | None]  # a section set to None is removed by the replay
    toolsAdded: list[dict[str, Any]]
    toolsRemoved: list[dict[str, Any]]
    timestamp: int


class BashExecutionMessage(TypedDict, total=False):
    """A shell command the user ran directly; not a tool result."""

    role: Required[Literal["bashExecution"]]
    command: str
    output: str
    exitCode: int | None
    cancelled: bool
    truncated: bool
    fullOutputPath: str
    excludeFromContext: bool
    timestamp: int


class CustomMessage(TypedDict, total=False):
    role: Required[Literal["custom"]]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: Any
    timestamp: int


class BranchSummaryMessage(TypedDict, total=False):
    role: Required[Literal["branchSummary"]]
    summary: str
    fromId: str | None
    timestamp: int


class CompactionSummaryMessage(TypedDict, total=False):
    role: Required[Literal["compactionSummary"]]
    summary: str
    tokensBefore: int
    timestamp: int


PiMessage = (
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
)


# -- lines ---------------------------------------------------------------------------------------------


class _TreeLine(TypedDict, total=False):
    """What every line but the header has: its place in the tree and when it was written."""

    id: str
    parentId: str | None
    timestamp: str  # ISO 8601


class SessionHeader(TypedDict, total=False):
    type: Required[Literal["session"]]
    version: int
    id: str
    timestamp: str
    cwd: str
    parentSession: str


class MessageEntry(_TreeLine, total=False):
    type: Required[Literal["message"]]
    message: PiMessage


class ModelChangeEntry(_TreeLine, total=False):
    type: Required[Literal["model_change"]]
    provider: str
    modelId: str


class ThinkingLevelChangeEntry(_TreeLine, total=False):
    type: Required[Literal["thinking_level_change"]]
    thinkingLevel: str


class UsageEntry(_TreeLine, total=False):
    type: Required[Literal["usage"]]
    kind: str
    provider: str
    model: str
    usage: Usage


class _SummaryLine(_TreeLine, total=False):
    """What a compaction and a branch summary share: the summary and how it was made."""

    summary: str
    usage: Usage  # the summarizing model's
    details: Any  # e.g. {"readFiles": [...], "modifiedFiles": [...]}
    fromHook: bool  # made by an extension


class CompactionEntry(_SummaryLine, total=False):
    type: Required[Literal["compaction"]]
    firstKeptEntryId: str
    tokensBefore: int
    systemMessage: SystemMessage


class ContextEditReplacement(TypedDict, total=False):
    content: str | list[ContentBlock]


class ContextEditEntry(_TreeLine, total=False):
    type: Required[Literal["context_edit"]]
    targetId: str
    replacement: ContextEditReplacement | None  # None omits the target from the context


class BranchSummaryEntry(_SummaryLine, total=False):
    type: Required[Literal["branch_summary"]]
    fromId: str


class CustomEntry(_TreeLine, total=False):
    type: Required[Literal["custom"]]
    customType: str
    data: Any


class CustomMessageEntry(_TreeLine, total=False):
    type: Required[Literal["custom_message"]]
    customType: str
    content: str | list[TextContent | ImageContent]
    display: bool
    details: Any


class LabelEntry(_TreeLine, total=False):
    type: Required[Literal["label"]]
    targetId: str
    label: str  # absent clears the target's label


class SessionInfoEntry(_TreeLine, total=False):
    type: Required[Literal["session_info"]]
    name: str


PiEntry = (
    MessageEntry
    | ModelChangeEntry
    | ThinkingLevelChangeEntry
    | UsageEntry
    | CompactionEntry
    | ContextEditEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
)
