"""The files of a branch, read from the database: the path's tool calls and results only, cached per state.

``pitree.files`` does the work; this module reads the rows it needs (the assistant messages, tool results
and user shell commands on the path root → leaf, one indexed range per segment) and shapes the answer.
Stored lines are already redacted in place, so a redacted secret stays redacted here too; a redaction bumps
the session's revision, which the cache key holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pitree.files import BranchFiles, Change, FileTouch, Hunk, branch_files
from pitree.jsjson import parse_json
from sessions_app.models import ChatSession, Entry
from sessions_app.queries import path_rows
from sessions_app.state_cache import cached, state_key

__all__ = ["COMMANDS_SHOWN", "FILES_VERSION", "file_detail", "files_at"]

FILES_VERSION = 1
FILES_TTL = 600  # seconds
COMMANDS_SHOWN = 20  # the newest shell commands listed; all are counted
ROLES = ("assistant", "toolResult", "bashExecution")
KIND_ORDER = ("created", "written", "edited", "read")


def _computed(session: ChatSession, leaf: Entry) -> dict[str, Any]:
    rows = path_rows(session, leaf, fields=("raw",), roles=ROLES)
    found = branch_files((parse_json(raw) for (raw,) in rows), session.cwd)
    return _payload(found)


def _payload(found: BranchFiles) -> dict[str, Any]:
    commands = [
        {"entryId": c.entry_id, "command": c.command, "isError": c.is_error, "byUser": c.by_user}
        for c in found.commands
    ]
    return {
        "files": [_file(touch) for touch in found.files],
        "commandCount": len(commands),
        "commands": commands[-COMMANDS_SHOWN:][::-1],
    }


def _file(touch: FileTouch) -> dict[str, Any]:
    return {
        "path": touch.path,
        "absolute": touch.absolute,
        "kinds": [k for k in KIND_ORDER if k in touch.kinds],
        "added": touch.added,
        "removed": touch.removed,
        "changeCount": len(touch.changes),
        "readCount": len(touch.reads),
        "lastEntryId": touch.last_entry_id,
        "contentKnown": touch.content_known,
        "commandsSince": touch.commands_since if touch.content_known else None,
        # Only in the one-file answer (popped from the list): the diffs and the text.
        "changes": [_change(c) for c in reversed(touch.changes)],
        "content": touch.content,
        "contentEntryId": touch.content_entry_id,
    }


def _change(change: Change) -> dict[str, Any]:
    return {
        "entryId": change.entry_id,
        "callEntryId": change.call_entry_id,
        "kind": change.kind,
        "added": change.added,
        "removed": change.removed,
        "numbered": change.numbered,
        "hunks": [_hunk(h) for h in change.hunks],
    }


def _hunk(hunk: Hunk) -> dict[str, Any]:
    return {
        "oldStart": hunk.old_start,
        "oldCount": hunk.old_count,
        "newStart": hunk.new_start,
        "newCount": hunk.new_count,
        "lines": hunk.lines,
    }


def _all_files(session: ChatSession, leaf: Entry) -> dict[str, Any]:
    """Every file with its diffs and content: built once per session state and leaf, for every reader."""
    near = hashlib.sha256((leaf.entry_id or "").encode("utf-8", "surrogatepass")).hexdigest()
    key = state_key(f"files:{FILES_VERSION}", session, near, leaf.seq)
    return cached(key, lambda: _computed(session, leaf), FILES_TTL)


def files_at(session: ChatSession, leaf: Entry | None) -> dict[str, Any]:
    """Return the files list at ``leaf`` (None: no entries), the most recently touched first."""
    if leaf is None:
        return {"leafId": None, "files": [], "commandCount": 0, "commands": []}
    body = _all_files(session, leaf)
    summary = [
        {k: v for k, v in item.items() if k not in ("changes", "content", "contentEntryId")}
        for item in body["files"]
    ]
    return {**body, "leafId": leaf.entry_id, "files": summary}


def file_detail(session: ChatSession, leaf: Entry, path: str) -> dict[str, Any] | None:
    """Return one file's changes (newest first, as hunks) and its content at ``leaf`` when known."""
    for item in _all_files(session, leaf)["files"]:
        if path in (item["path"], item["absolute"]):
            return {"leafId": leaf.entry_id, "file": item}
    return None
