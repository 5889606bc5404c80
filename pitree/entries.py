"""Session entries as plain data. Entries are append-only: an entry never changes after it is written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from pitree.schema import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
)

__all__ = ["ANCHORS", "Entry", "anchor_of", "entry_from_value"]

# The projection anchors an entry row carries: the seq of the nearest compaction, model change (or
# assistant answer, which names its model) and thinking-level change on its path, itself included.
ANCHORS = ("compaction_seq", "model_seq", "thinking_seq")


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One appended line of a session, in append order ``seq`` (0-based, header excluded)."""

    seq: int
    id: str | None  # None for lines that cannot take part in the tree (stray headers, non-objects)
    parent_id: str | None
    type: str | None
    payload: Any  # the verbatim parsed entry: unknown fields and unknown types are kept

    @property
    def timestamp(self) -> Any:
        return self.payload.get("timestamp") if isinstance(self.payload, dict) else None

    @property
    def message(self) -> Any:
        return self.payload.get("message") if isinstance(self.payload, dict) else None

    @property
    def role(self) -> Any:
        message = self.message
        return message.get("role") if isinstance(message, dict) else None

    def get(self, key: str, default: Any = None) -> Any:
        return self.payload.get(key, default) if isinstance(self.payload, dict) else default

    # Typed views: the line as its type's shape (``pitree.schema``) when its ``type`` says so, else None.
    # The fields are still as stored: a view says what they hold when present, readers check the rest.
    def _view(self, kind: str) -> Any:
        return self.payload if self.type == kind and isinstance(self.payload, dict) else None

    def as_message(self) -> MessageEntry | None:
        return cast("MessageEntry | None", self._view("message"))

    def as_compaction(self) -> CompactionEntry | None:
        return cast("CompactionEntry | None", self._view("compaction"))

    def as_context_edit(self) -> ContextEditEntry | None:
        return cast("ContextEditEntry | None", self._view("context_edit"))

    def as_branch_summary(self) -> BranchSummaryEntry | None:
        return cast("BranchSummaryEntry | None", self._view("branch_summary"))

    def as_custom_message(self) -> CustomMessageEntry | None:
        return cast("CustomMessageEntry | None", self._view("custom_message"))

    def as_label(self) -> LabelEntry | None:
        return cast("LabelEntry | None", self._view("label"))

    def as_model_change(self) -> ModelChangeEntry | None:
        return cast("ModelChangeEntry | None", self._view("model_change"))

    def as_thinking_level_change(self) -> ThinkingLevelChangeEntry | None:
        return cast("ThinkingLevelChangeEntry | None", self._view("thinking_level_change"))


def entry_from_value(seq: int, value: Any) -> Entry:
    """Wrap a parsed line; lines without a string id (or stray headers) stay outside the tree."""
    if not isinstance(value, dict):
        return Entry(seq=seq, id=None, parent_id=None, type=None, payload=value)
    entry_type = value.get("type")
    entry_id = value.get("id")
    parent = value.get("parentId")
    in_tree = isinstance(entry_id, str) and entry_type != "session"
    return Entry(
        seq=seq,
        id=entry_id if in_tree else None,
        parent_id=parent if in_tree and isinstance(parent, str) else None,
        type=entry_type if isinstance(entry_type, str) else None,
        payload=value,
    )


def anchor_of(entry: Entry) -> str | None:
    """Return which projection anchor the entry itself is, if any (the one rule imports and appends use)."""
    if entry.type == "compaction":
        return "compaction_seq"
    if entry.type == "model_change" or (entry.type == "message" and entry.role == "assistant"):
        return "model_seq"
    if entry.type == "thinking_level_change":
        return "thinking_seq"
    return None
