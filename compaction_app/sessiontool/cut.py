"""``sessiontool cut FILE KEEP [--leaf=ID|null] [--reserve=N] [--window=N]``: plan a compaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compaction_app.domain.fileops import compute_file_lists, format_file_operations
from compaction_app.domain.preparation import (
    CompactionPreparation,
    SourcedMessage,
    manual_compaction_error,
    prepare_compaction,
)
from compaction_app.domain.serialization import serialize_conversation
from compaction_app.domain.settings import DEFAULT_RESERVE_TOKENS, CompactionSettings, should_compact
from compaction_app.sessiontool.common import NotASession, js_value, load_case, split_leaf_option
from pitree.messages import convert_to_llm
from pitree.projection import project
from pitree.tokens import estimate_projected_context_tokens

__all__ = ["preparation_view", "run"]

USAGE = "usage: cut FILE KEEP [--leaf=ID|null] [--reserve=N] [--window=N]"


def _sources(messages: tuple[SourcedMessage, ...]) -> list[dict[str, Any]]:
    return [{"source": m.source, "role": m.message.get("role")} for m in messages]


def _serialize(messages: tuple[SourcedMessage, ...]) -> str:
    return serialize_conversation(convert_to_llm(m.message for m in messages))


def preparation_view(prep: CompactionPreparation) -> dict[str, Any]:
    """Describe a compaction plan: the cut, the messages on each side, file lists and transcripts."""
    read_files, modified_files = compute_file_lists(prep.file_ops)
    return {
        "firstKeptEntryId": prep.first_kept_entry_id,
        "isSplitTurn": prep.is_split_turn,
        "tokensBefore": js_value(prep.tokens_before),
        "previousSummary": prep.previous_summary,
        "messagesToSummarize": _sources(prep.history),
        "turnPrefixMessages": _sources(prep.turn_prefix),
        "fileOps": prep.file_ops.as_dict(),
        "fileLists": {"readFiles": read_files, "modifiedFiles": modified_files},
        "fileListsText": format_file_operations(read_files, modified_files),
        "serializedHistory": _serialize(prep.history),
        "serializedTurnPrefix": _serialize(prep.turn_prefix),
    }


def _int_option(options: dict[str, str], name: str, default: int | None) -> int | None:
    value = options.get(name)
    return default if value is None else int(value)


def run(args: list[str]) -> object:
    positional, options = split_leaf_option(args)
    if len(positional) < 2:
        return {"error": USAGE}
    path, keep = positional[0], int(positional[1])
    if not Path(path).exists():
        return {"error": f"no such file: {path}"}
    try:
        session = load_case(path)
    except NotASession as exc:
        return {"error": str(exc), "fileEffect": "none"}

    tree = session.tree
    leaf_option = options.get("leaf")
    leaf = tree.resolve_leaf(
        None if leaf_option in (None, "null") else leaf_option, explicit_null=leaf_option == "null"
    )
    branch = tree.path(leaf)
    reserve = _int_option(options, "reserve", None)
    settings = CompactionSettings(
        reserve_tokens=DEFAULT_RESERVE_TOKENS if reserve is None else reserve, keep_recent_tokens=keep
    )
    prep = prepare_compaction(branch, settings)
    out: dict[str, Any] = {
        "load": {"fileEffect": session.file.file_effect, "fileLeafId": tree.last_leaf_id()},
        "leafId": leaf,
        "branch": [e.id for e in branch],
        "settings": settings.as_dict(),
        "result": preparation_view(prep) if prep is not None else None,
    }
    error = manual_compaction_error(branch, prep)
    if error is not None:
        out["manualCompactError"] = error
    window = _int_option(options, "window", None)
    # Pi answers whether to compact only when there is something to compact.
    if window is not None and prep is not None:
        tokens = estimate_projected_context_tokens(project(branch), branch).tokens
        out["shouldCompact"] = {
            "contextWindow": window,
            "tokens": js_value(tokens),
            "result": should_compact(tokens, window, settings),
        }
    return out
