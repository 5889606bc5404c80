"""``sessiontool branch-summary FILE OLD_LEAF|null TARGET [TOKEN_BUDGET]``: what a branch summary reads."""

from __future__ import annotations

from typing import Any

from compaction_app.domain.branch_summary import (
    branch_file_lists,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from compaction_app.domain.serialization import serialize_conversation
from compaction_app.sessiontool.common import NotASession, js_value, load_case, message_view
from pitree.messages import convert_to_llm

__all__ = ["run"]


def run(args: list[str]) -> object:
    if len(args) < 3:
        return {"error": "usage: branch-summary FILE OLD_LEAF|null TARGET [TOKEN_BUDGET]"}
    try:
        session = load_case(args[0])
    except NotASession as exc:
        return {"error": str(exc)}
    old_leaf = None if args[1] == "null" else args[1]
    target = args[2]
    budget = float(args[3]) if len(args) > 3 else 0
    entries, ancestor = collect_entries_for_branch_summary(session.tree, old_leaf, target)
    preparation = prepare_branch_entries(entries, budget)
    read_files, modified_files = branch_file_lists(preparation)
    return {
        "commonAncestorId": ancestor,
        "entries": [e.id for e in entries],
        "tokenBudget": js_value(budget),
        "messages": [_message(m) for m in preparation.messages],
        "totalTokens": preparation.total_tokens,
        "fileOps": preparation.file_ops.as_dict(),
        "fileLists": {"readFiles": read_files, "modifiedFiles": modified_files},
        "serialized": serialize_conversation(convert_to_llm(preparation.messages)),
    }


def _message(message: dict[str, Any]) -> dict[str, Any]:
    view = message_view(message, None)
    del view["source"]  # the oracle lists prepared messages without their entries
    return view
