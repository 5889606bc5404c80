"""``sessiontool branch-with-summary FILE FROM|null SUMMARY [--leaf=ID|null]``: move the leaf and summarise.

The entry is appended in memory only; the output shows the new entry and the projection at it.
"""

from __future__ import annotations

from typing import Any

from compaction_app.sessiontool.common import NotASession, load_case, split_leaf_option
from compaction_app.sessiontool.project import projection_view
from pitree.entries import entry_from_value
from pitree.operations import TreeOperationError, branch_summary_entry, check_branch_target
from pitree.session import LoadedSession
from pitree.tree import SessionTree

__all__ = ["NOW", "appended_view", "pick_leaf", "run"]

# The clock's value in outputs, as the oracle prints it: the entry's ISO time and its milliseconds alike.
NOW = "<NOW>"


def pick_leaf(session: LoadedSession, options: dict[str, str]) -> str | None:
    """Return the leaf a command starts from: ``--leaf`` (``null`` resets it) or the file's last entry."""
    if "leaf" not in options:
        return session.tree.last_leaf_id()
    if options["leaf"] == "null":
        return None
    if options["leaf"] not in session.tree.by_id:
        raise TreeOperationError(f"Entry {options['leaf']} not found")
    return options["leaf"]


def appended_view(session: LoadedSession, old_leaf: str | None, entry: dict[str, Any]) -> dict[str, Any]:
    """Describe the session after appending ``entry`` and moving the leaf to it."""
    entries = [*session.tree.entries, entry_from_value(len(session.tree.entries), entry)]
    after = LoadedSession(session.file, SessionTree(entries))
    view = projection_view(after, entry["id"])
    for message in view["messages"]:
        if message.get("source") == entry["id"] and "timestamp" in message:
            message["timestamp"] = NOW
    return {
        "oldLeafId": old_leaf,
        "entry": {**entry, "timestamp": NOW},
        "newLeafId": entry["id"],
        "leafArg": entry["id"],
        **view,
    }


def run(args: list[str]) -> object:
    positional, options = split_leaf_option(args)
    if len(positional) < 3:
        return {"error": "usage: branch-with-summary FILE FROM|null SUMMARY [--leaf=ID|null]"}
    try:
        session = load_case(positional[0])
    except NotASession as exc:
        return {"error": str(exc)}
    branch_from = None if positional[1] == "null" else positional[1]
    try:
        old_leaf = pick_leaf(session, options)
        check_branch_target(session.tree, branch_from)
    except TreeOperationError as exc:
        return {"error": exc.message}
    entry = branch_summary_entry(branch_from, old_leaf, positional[2], taken_ids=session.tree.by_id)
    return appended_view(session, old_leaf, entry)
