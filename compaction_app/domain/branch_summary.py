"""Summarising the branch a user navigates away from.

The entries between the old leaf and the deepest common ancestor with the target are collected,
then fitted newest-first into a token budget. Earlier summaries are kept while the budget is under
90% full, and the file lists of earlier summaries always carry forward, even when cut off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compaction_app.domain.fileops import (
    FileOps,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
)
from pitree.entries import Entry
from pitree.jsjson import js_truthy
from pitree.messages import branch_summary_message, compaction_summary_message, custom_message
from pitree.projection import project_entry
from pitree.tokens import estimate_tokens
from pitree.tree import SessionTree

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS",
    "DEFAULT_CONTEXT_WINDOW",
    "NO_CONTENT_SUMMARY",
    "BranchPreparation",
    "branch_file_lists",
    "branch_summary_budget",
    "branch_summary_text",
    "collect_entries_for_branch_summary",
    "prepare_branch_entries",
]

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n"
)
NO_CONTENT_SUMMARY = "No content to summarize"
DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS = 16384
# Summaries and compactions that overflow the budget still go in while it is less than this full.
_SUMMARY_FILL_LIMIT = 0.9


def collect_entries_for_branch_summary(
    tree: SessionTree, old_leaf_id: str | None, target_id: str | None
) -> tuple[list[Entry], str | None]:
    """Return the entries from below the common ancestor down to the old leaf, and the ancestor id."""
    if not old_leaf_id:
        return [], None
    old_path = {e.id for e in tree.path(old_leaf_id)}
    ancestor: str | None = None
    for entry in reversed(tree.path(target_id)):
        if entry.id in old_path:
            ancestor = entry.id
            break
    collected: list[Entry] = []
    current: str | None = old_leaf_id
    while current and current != ancestor:
        found = tree.get(current)
        if found is None:
            break
        collected.append(found)
        pos = tree.by_id[current]
        parent = tree.parent[pos]
        current = tree.entries[parent].id if parent != -1 else None
    collected.reverse()
    return collected, ancestor


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchPreparation:
    """The messages that fit the budget (chronological), their sources, file ops and token total."""

    messages: list[dict[str, Any]]
    sources: list[str | None]
    file_ops: FileOps
    total_tokens: int


def _message_for(entry: Entry, edit: Entry | None) -> dict[str, Any] | None:
    """Return the one message an entry contributes to a branch summary, or None."""
    kind = entry.type
    if kind == "message":
        message = entry.message
        if isinstance(message, Mapping) and message.get("role") == "toolResult":
            return None
        if edit is not None:
            projected = project_entry(entry, edit)
            return projected[0] if projected else None
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        if edit is not None:
            projected = project_entry(entry, edit)
            return projected[0] if projected else None
        payload = entry.payload
        missing = [key for key in ("display", "details") if key not in payload]
        return custom_message(
            payload.get("customType"),
            payload.get("content"),
            payload.get("display"),
            payload.get("details"),
            payload.get("timestamp"),
            missing=missing,
        )
    if kind == "branch_summary":
        # Unlike the projection, an empty summary still counts here.
        return branch_summary_message(entry.get("summary"), entry.get("fromId"), entry.get("timestamp"))
    if kind == "compaction":
        return compaction_summary_message(
            entry.get("summary"), entry.get("tokensBefore"), entry.get("timestamp")
        )
    return None


def prepare_branch_entries(entries: Sequence[Entry], token_budget: float = 0) -> BranchPreparation:
    """Fit collected entries newest-first into ``token_budget`` (0 or less: no limit)."""
    file_ops = FileOps()
    for entry in entries:
        if (
            entry.type == "branch_summary"
            and not js_truthy(entry.get("fromHook"))
            and js_truthy(entry.get("details"))
        ):
            file_ops.seed(entry.get("details"))
    edits: dict[str, Entry] = {}
    for entry in entries:
        if entry.type == "context_edit":
            target = entry.get("targetId")
            if isinstance(target, str):
                edits[target] = entry
    messages: list[dict[str, Any]] = []
    sources: list[str | None] = []
    total = 0
    for entry in reversed(entries):
        message = _message_for(entry, edits.get(entry.id) if entry.id is not None else None)
        if message is None:
            continue
        # File ops come first, so the message that breaks the budget still contributes its paths.
        extract_file_ops_from_message(message, file_ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.type in ("compaction", "branch_summary") and total < _SUMMARY_FILL_LIMIT * token_budget:
                messages.append(message)
                sources.append(entry.id)
                total += tokens
            break
        messages.append(message)
        sources.append(entry.id)
        total += tokens
    messages.reverse()
    sources.reverse()
    return BranchPreparation(messages=messages, sources=sources, file_ops=file_ops, total_tokens=total)


def branch_summary_budget(context_window: float | None, reserve_tokens: float | None = None) -> float:
    """Return the token budget for a branch summary's input: the window minus the reserve."""
    window = context_window or DEFAULT_CONTEXT_WINDOW
    reserve = DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS if reserve_tokens is None else reserve_tokens
    return window - reserve


def branch_summary_text(model_text: str, read_files: Sequence[Any], modified_files: Sequence[Any]) -> str:
    """Return the stored summary: the fixed preamble, the model's text, then the file lists."""
    return BRANCH_SUMMARY_PREAMBLE + model_text + format_file_operations(read_files, modified_files)


def branch_file_lists(preparation: BranchPreparation) -> tuple[list[Any], list[Any]]:
    """Return (readFiles, modifiedFiles) for a prepared branch, as a summary's details store them."""
    return compute_file_lists(preparation.file_ops)
