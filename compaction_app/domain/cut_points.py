"""Where a compaction cuts: the first projected entry kept verbatim, and whether that splits a turn.

Cut points are found on the projection, so omitted entries never become the first kept entry and
edited content is what gets counted. Walking back from the leaf, entries are kept until
``keep_recent_tokens`` is reached; the cut then lands on the nearest message that may start the kept
part (never a tool result, which must stay with the call that produced it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pitree.projection import ProjectedEntry, entry_to_messages
from pitree.tokens import estimate_tokens

__all__ = [
    "CutPoint",
    "find_projected_cut_point",
    "is_cut_point_message",
    "is_turn_start_message",
]

_CUT_POINT_ROLES = frozenset(
    {"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)
_TURN_START_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


def is_cut_point_message(message: Mapping[str, Any]) -> bool:
    """Return True if the kept part of a context may begin with this message."""
    return message.get("role") in _CUT_POINT_ROLES


def is_turn_start_message(message: Mapping[str, Any]) -> bool:
    """Return True if this message opens a turn (anything the user side contributes)."""
    return message.get("role") in _TURN_START_ROLES


@dataclass(frozen=True, slots=True)
class CutPoint:
    """Index of the first kept projected entry; the start of its turn when the cut splits one, else -1."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def _is_candidate(pe: ProjectedEntry) -> bool:
    return pe.entry.type != "compaction" and any(is_cut_point_message(m) for m in pe.messages)


def _starts_turn(pe: ProjectedEntry) -> bool:
    return pe.entry.type != "compaction" and any(is_turn_start_message(m) for m in pe.messages)


def _intrinsically_visible(pe: ProjectedEntry) -> bool:
    return pe.entry.type != "context_edit" and bool(entry_to_messages(pe.entry))


def _is_omitted(pe: ProjectedEntry) -> bool:
    return _intrinsically_visible(pe) and not pe.messages


def _suffix_is_omitted_attempt(suffix: Sequence[ProjectedEntry]) -> bool:
    """Return True if all after the cut is a recovery omission: hidden attempts and their edits."""
    omitted_ids = {pe.entry.id for pe in suffix if _is_omitted(pe)}
    has_omitted_assistant = False
    for pe in suffix:
        entry = pe.entry
        if entry.type == "compaction":
            return False
        if entry.type == "context_edit":
            if entry.get("replacement") is not None and entry.get("targetId") not in omitted_ids:
                return False
            continue
        if _intrinsically_visible(pe) and pe.messages:
            return False
        if entry.type == "message" and entry.role == "assistant" and _is_omitted(pe):
            has_omitted_assistant = True
    return has_omitted_assistant


def find_projected_cut_point(
    entries: Sequence[ProjectedEntry], start: int, end: int, keep_recent_tokens: float
) -> CutPoint:
    """Return where to cut ``entries[start:end]`` so about ``keep_recent_tokens`` stay verbatim."""
    candidates = [i for i in range(start, end) if _is_candidate(entries[i])]
    if not candidates:
        return CutPoint(start, -1, False)

    cut = candidates[0]
    exceeded = False
    total = 0
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in entries[i].messages)
        if tokens == 0:
            continue
        total += tokens
        if total >= keep_recent_tokens:
            exceeded = True
            # Trailing tool results alone can exceed the budget; keep the call that made them then.
            cut = next((c for c in candidates if c >= i), candidates[-1])
            break

    # A cut just before an attempt that a recovery hid would keep nothing visible; keep one entry more.
    if exceeded and _suffix_is_omitted_attempt(entries[cut + 1 : end]):
        cut += 1

    # Metadata directly before the cut (labels, edits, settings) travels with the kept part.
    while cut > start and entries[cut - 1].entry.type != "compaction" and not entries[cut - 1].messages:
        cut -= 1

    if cut < len(entries) and _starts_turn(entries[cut]):
        return CutPoint(cut, -1, False)
    turn_start = next(
        (i for i in range(cut, start - 1, -1) if i < len(entries) and _starts_turn(entries[i])), -1
    )
    return CutPoint(cut, turn_start, turn_start != -1)
