"""Projection: what the model sees for a path.

The newest compaction on the path comes first, then the path from its ``firstKeptEntryId`` (system
messages skipped) up to it, then everything after it. ``context_edit`` entries inside that range omit
or rewrite their targets, the last edit per target winning. Model and thinking level come from the
whole path, including what the compaction summarised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pitree.entries import Entry
from pitree.jsjson import UNDEFINED
from pitree.messages import branch_summary_message, compaction_summary_message, custom_message

__all__ = [
    "EDITABLE_ROLES",
    "ProjectedEntry",
    "Projection",
    "SessionSettings",
    "build_context_entries",
    "entry_to_messages",
    "project",
    "project_entry",
    "session_settings",
]

EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})


@dataclass(frozen=True, slots=True)
class SessionSettings:
    thinking_level: Any  # "off" unless a thinking_level_change says otherwise
    model: dict[str, Any] | None  # {"provider", "modelId"}; a missing field is absent


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    entry: Entry
    messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Projection:
    entries: list[ProjectedEntry]
    messages: list[dict[str, Any]]
    settings: SessionSettings

    @property
    def thinking_level(self) -> Any:
        return self.settings.thinking_level

    @property
    def model(self) -> dict[str, Any] | None:
        return self.settings.model

    def sources(self) -> list[str | None]:
        """Return the source entry id of each flat message."""
        return [pe.entry.id for pe in self.entries for _ in pe.messages]


def session_settings(path: Sequence[Entry]) -> SessionSettings:
    """Return model and thinking level folded over the whole path."""
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    for entry in path:
        if (level := entry.as_thinking_level_change()) is not None:
            thinking = level.get("thinkingLevel")
        elif (change := entry.as_model_change()) is not None:
            model = _model(change.get("provider", _ABSENT), change.get("modelId", _ABSENT))
        elif entry.type == "message" and entry.role == "assistant":
            message = entry.message
            model = _model(message.get("provider", _ABSENT), message.get("model", _ABSENT))
    return SessionSettings(thinking, model)


def settings_from_anchors(model_entry: Entry | None, thinking_entry: Entry | None) -> SessionSettings:
    """Return the settings given the latest model and thinking entries on a path."""
    path = [e for e in (model_entry, thinking_entry) if e is not None]
    return session_settings(path)


_ABSENT: Any = object()


def _model(provider: Any, model_id: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if provider is not _ABSENT:
        out["provider"] = provider
    if model_id is not _ABSENT:
        out["modelId"] = model_id
    return out


def build_context_entries(path: Sequence[Entry]) -> list[Entry]:
    """Return the entries that contribute to the context, newest compaction first."""
    last = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            last = i
            break
    if last < 0:
        return list(path)
    compaction = path[last]
    view = compaction.as_compaction()
    first_kept = view.get("firstKeptEntryId") if view is not None else None
    out = [compaction]
    keeping = False
    for entry in path[:last]:
        if not keeping and first_kept is not None and entry.id == first_kept:
            keeping = True
        if keeping and not (entry.type == "message" and entry.role == "system"):
            out.append(entry)
    out.extend(path[last + 1 :])
    return out


def entry_to_messages(entry: Entry) -> list[dict[str, Any]]:
    """Return the messages one entry contributes before edits."""
    if entry.type == "message":
        message: Any = entry.message  # as stored: a line may hold a message that is not an object
        if not isinstance(message, dict):
            return [message] if message is not None else []
        role = message.get("role")
        if message.get("content") is None:
            if role == "system":
                return [{**message, "content": ""}]
            if role in ("user", "assistant", "toolResult"):
                return [{**message, "content": []}]
        return [message]
    if (custom := entry.as_custom_message()) is not None:
        content = custom.get("content")
        missing = [k for k in ("display", "details") if k not in custom]
        return [
            custom_message(
                custom.get("customType"),
                [] if content is None else content,
                custom.get("display"),
                custom.get("details"),
                custom.get("timestamp", UNDEFINED),
                missing=missing,
            )
        ]
    if (branch := entry.as_branch_summary()) is not None:
        summary = branch.get("summary")
        if not summary:
            return []
        return [branch_summary_message(summary, branch.get("fromId"), branch.get("timestamp", UNDEFINED))]
    if (compaction := entry.as_compaction()) is not None:
        out: list[dict[str, Any]] = []
        system = compaction.get("systemMessage")
        if system is not None:
            out.append(cast(Any, system))  # as stored, even when not an object
        out.append(
            compaction_summary_message(
                compaction.get("summary"),
                compaction.get("tokensBefore"),
                compaction.get("timestamp", UNDEFINED),
            )
        )
        return out
    return []


def project_entry(entry: Entry, edit: Entry | None) -> list[dict[str, Any]]:
    """Return an entry's messages with its last context edit applied."""
    messages = entry_to_messages(entry)
    view = edit.as_context_edit() if edit is not None else None
    if edit is None:
        return messages
    replacement: Any = view.get("replacement") if view is not None else edit.get("replacement")
    if replacement is None:
        return []
    content = replacement.get("content") if isinstance(replacement, Mapping) else None
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role in EDITABLE_ROLES:
            new_content = content
            if role in ("assistant", "toolResult") and isinstance(content, str):
                new_content = [{"type": "text", "text": content}]
            out.append({**message, "content": new_content})
        else:
            out.append(message)
    return out


def project(path: Sequence[Entry], *, settings: SessionSettings | None = None) -> Projection:
    """Project a path (root→leaf, or any suffix that starts at or before the kept range)."""
    context = build_context_entries(path)
    edits: dict[str, Entry] = {}
    for entry in context:
        if (edit := entry.as_context_edit()) is not None:
            target = edit.get("targetId")
            if isinstance(target, str):
                edits[target] = entry
    projected: list[ProjectedEntry] = []
    flat: list[dict[str, Any]] = []
    for i, entry in enumerate(context):
        if entry.type == "compaction" and i > 0:
            messages: list[dict[str, Any]] = []
        else:
            messages = project_entry(entry, edits.get(entry.id) if entry.id is not None else None)
        projected.append(ProjectedEntry(entry, messages))
        flat.extend(messages)
    return Projection(projected, flat, settings if settings is not None else session_settings(path))
