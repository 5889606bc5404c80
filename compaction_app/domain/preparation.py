"""Plan a compaction: what to summarise, what to keep, and what the summary must carry forward.

Planning is pure and works on the projection of the path, so edits and the newest compaction's kept
range apply. The kept tail of an earlier compaction is summarised again together with its summary,
which is handed on as the previous summary to update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compaction_app.domain.cut_points import find_projected_cut_point
from compaction_app.domain.fileops import FileOps, extract_file_ops_from_message
from compaction_app.domain.settings import CompactionSettings
from pitree.entries import Entry
from pitree.jsjson import js_truthy
from pitree.projection import ProjectedEntry, project
from pitree.tokens import estimate_projected_context_tokens

__all__ = [
    "ALREADY_COMPACTED",
    "NOTHING_TO_COMPACT",
    "CompactionPreparation",
    "SourcedMessage",
    "manual_compaction_error",
    "prepare_compaction",
]

ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"


@dataclass(frozen=True, slots=True)
class SourcedMessage:
    """A projected message and the id of the entry it came from."""

    source: str | None
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPreparation:
    """Everything a summarizer needs, decided before any model is called."""

    first_kept_entry_id: str
    history: tuple[SourcedMessage, ...]  # summarised into the history summary
    turn_prefix: tuple[SourcedMessage, ...]  # the cut turn's beginning, summarised on its own
    is_split_turn: bool
    tokens_before: float
    previous_summary: Any  # the newest compaction's summary, or None
    file_ops: FileOps
    settings: CompactionSettings

    @property
    def messages_to_summarize(self) -> list[Mapping[str, Any]]:
        return [m.message for m in self.history]

    @property
    def turn_prefix_messages(self) -> list[Mapping[str, Any]]:
        return [m.message for m in self.turn_prefix]


def _summarizable(entries: Sequence[ProjectedEntry], start: int, end: int) -> tuple[SourcedMessage, ...]:
    """Return the non-system messages of ``entries[start:end]``, skipping compactions."""
    out: list[SourcedMessage] = []
    for pe in entries[start:end]:
        if pe.entry.type == "compaction":
            continue
        out.extend(SourcedMessage(pe.entry.id, m) for m in pe.messages if m.get("role") != "system")
    return tuple(out)


def prepare_compaction(path: Sequence[Entry], settings: CompactionSettings) -> CompactionPreparation | None:
    """Return the compaction plan for a root-to-leaf path, or None when there is nothing to compact."""
    if path and path[-1].type == "compaction":
        return None
    projection = project(path)
    entries = projection.entries

    previous_index = next(
        (i for i, pe in enumerate(entries) if pe.entry.type == "compaction" and pe.messages), -1
    )
    previous = entries[previous_index] if previous_index >= 0 else None
    boundary_start = previous_index + 1
    previous_summary = previous.entry.get("summary") if previous is not None else None

    tokens_before = estimate_projected_context_tokens(projection, path).tokens
    cut = find_projected_cut_point(entries, boundary_start, len(entries), settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(entries):
        return None
    first_kept_id = entries[cut.first_kept_entry_index].entry.id
    if not first_kept_id:
        return None

    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    history = _summarizable(entries, boundary_start, history_end)
    prefix = (
        _summarizable(entries, cut.turn_start_index, cut.first_kept_entry_index) if cut.is_split_turn else ()
    )
    if not history and not prefix:
        return None

    file_ops = FileOps()
    if previous is not None and not js_truthy(previous.entry.get("fromHook")):
        file_ops.seed(previous.entry.get("details"))
    for item in history + prefix:
        extract_file_ops_from_message(item.message, file_ops)

    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        history=history,
        turn_prefix=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=file_ops,
        settings=settings,
    )


def manual_compaction_error(path: Sequence[Entry], preparation: CompactionPreparation | None) -> str | None:
    """Return why a manual compaction cannot run, or None when it can."""
    if preparation is not None:
        return None
    if path and path[-1].type == "compaction":
        return ALREADY_COMPACTED
    return NOTHING_TO_COMPACT
