"""``sessiontool context-edit FILE TARGET REPLACEMENT_JSON [--leaf=ID|null]``: edit a message's context.

The ``context_edit`` entry is appended in memory under the leaf; the output shows it, the context entries
and the messages they now give.
"""

from __future__ import annotations

from compaction_app.sessiontool.branch_with_summary import appended_view, pick_leaf
from compaction_app.sessiontool.common import NotASession, load_case, split_leaf_option
from pitree.jsjson import INVALID, parse_json
from pitree.operations import TreeOperationError, context_edit_entry

__all__ = ["run"]


def run(args: list[str]) -> object:
    positional, options = split_leaf_option(args)
    if len(positional) < 3:
        return {"error": "usage: context-edit FILE TARGET REPLACEMENT_JSON [--leaf=ID|null]"}
    try:
        session = load_case(positional[0])
    except NotASession as exc:
        return {"error": str(exc)}
    replacement = parse_json(positional[2])
    if replacement is INVALID:
        return {"error": f"REPLACEMENT_JSON is not JSON: {positional[2][:80]}"}
    try:
        leaf = pick_leaf(session, options)
        entry = context_edit_entry(session.tree, leaf, positional[1], replacement)
    except TreeOperationError as exc:
        return {"error": exc.message}
    view = appended_view(session, leaf, entry)
    # Pi's answer shows the new entry (without its clock time) and the context it leads to.
    shown = {k: v for k, v in view["entry"].items() if k != "timestamp"}
    return {"entry": shown, "contextEntries": view["contextEntries"], "messages": view["messages"]}
