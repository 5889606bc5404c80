"""``sessiontool fork FILE LEAF [--mode=path|path+siblings|subtree]``: the session a fork would create.

The source file is never touched; the new file is described from memory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from compaction_app.sessiontool.common import NotASession, load_case, split_leaf_option
from pitree.entries import entry_from_value
from pitree.jsonl import serialize_entry
from pitree.operations import (
    FORK_MODES,
    BranchedSession,
    ForkMode,
    TreeOperationError,
    copy_for_fork,
)
from pitree.projection import project
from pitree.tree import SessionTree

__all__ = ["branched_view", "run"]


def branched_view(branched: BranchedSession, directory: Path) -> dict[str, Any]:
    """Describe a new session: header, entries, resolved labels, leaf and context entries."""
    header = branched.header
    tree = SessionTree([entry_from_value(seq, value) for seq, value in enumerate(branched.entries)])
    labels, _ = tree.labels()
    name = re.sub(r"[:.]", "-", str(header["timestamp"])) + f"_{header['id']}.jsonl"
    written = [header, *branched.entries] if branched.has_conversation else []
    view_header = {
        k: header[k] for k in ("version", "id", "timestamp", "cwd", "parentSession") if k in header
    }
    return {
        "returnedFile": str(directory / name),
        "fileWrittenLines": len([serialize_entry(line) for line in written]),
        "header": view_header,
        "entries": [_entry_view(e) for e in branched.entries],
        "labels": [[k, v] for k, v in labels.items()],
        "leafId": branched.leaf_id,
        "context": [pe.entry.id for pe in project(tree.path(branched.leaf_id)).entries],
    }


def _entry_view(entry: dict[str, Any]) -> dict[str, Any]:
    view = {"id": entry.get("id"), "parentId": entry.get("parentId"), "type": entry.get("type")}
    if entry.get("type") == "label":
        for key in ("targetId", "label", "timestamp"):
            if key in entry:
                view[key] = entry[key]
    elif entry.get("type") == "compaction" and "firstKeptEntryId" in entry:
        view["firstKeptEntryId"] = entry["firstKeptEntryId"]
    return view


def run(args: list[str]) -> object:
    positional, options = split_leaf_option(args)
    if len(positional) < 2:
        return {"error": "usage: fork FILE LEAF [--mode=path|path+siblings|subtree]"}
    mode = options.get("mode", "path")
    if mode not in FORK_MODES:
        return {"error": f"unknown fork mode {mode!r} (known: {', '.join(FORK_MODES)})"}
    source = Path(positional[0]).resolve()
    try:
        session = load_case(str(source))
    except NotASession as exc:
        return {"error": str(exc)}
    header = session.file.header or {}
    try:
        branched = copy_for_fork(
            session.tree,
            positional[1],
            mode=cast(ForkMode, mode),
            cwd=header.get("cwd"),
            parent_session=str(source),
        )
    except TreeOperationError as exc:
        return {"error": exc.message}
    return branched_view(branched, source.parent)
