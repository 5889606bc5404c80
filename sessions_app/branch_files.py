"""The files of a branch, read from the database: the path's tool calls and results only, cached per state.

``pitree.files`` does the work; this module reads the rows it needs (the assistant messages, tool results
and user shell commands on the path root → leaf, one indexed range per segment) and shapes the answer.
Stored lines are already redacted in place, so a redacted secret stays redacted here too; a redaction bumps
the session's revision, which the cache key holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from django.core.cache import caches
from django.db import connection

from pitree.files import BranchFiles, Change, FilesWalk, FileTouch, Hunk
from pitree.files_compare import ComparedFile, Side, compare_files
from pitree.jsjson import parse_json
from sessions_app import file_steps
from sessions_app.models import ChatSession, Entry, FileStep
from sessions_app.queries import SegmentTable, path_ranges, path_rows, segment_table

__all__ = ["COMMANDS_SHOWN", "FILES_LIMIT", "FILES_VERSION", "file_detail", "files_at", "files_compared"]

FILES_VERSION = 2
FILES_TTL = 600  # seconds
COMMANDS_SHOWN = 20  # the newest shell commands listed; all are counted
FILES_LIMIT = 200  # files listed by default, the most recently touched; all are counted
ROLES = ("assistant", "toolResult", "bashExecution")
KIND_ORDER = ("created", "written", "edited", "read")


# A walk kept for a leaf lets the next leaf below it (the session growing, a selection moving down) read
# only the entries between the two. Kept only while its files' texts are small enough to cache cheaply.
WALK_CHARS = 4_000_000
WALKS_KEPT = 8  # per session: the newest leaves whose walks are kept


def _walked(session: ChatSession, leaf: Entry) -> BranchFiles:
    """Walk the branch to ``leaf``: from the kept walk of a leaf above it when there is one."""
    table = segment_table(session)
    walk, start = _resume(session, leaf, table)
    rows = path_rows(session, leaf, min_depth=start, fields=("raw",), roles=ROLES, table=table)
    walk.feed(_parsed(raw) for (raw,) in rows)
    _keep(session, leaf, walk)
    return walk.result()


def _parsed(raw: str) -> Any:
    """A stored line's value. orjson is several times faster; what it refuses (integers past 64 bits, lone
    surrogates) goes to JavaScript's rules, and the numbers it reads differently do not name files."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return parse_json(raw)


def _recent_key(session: ChatSession) -> str:
    return (
        f"files-recent:{FILES_VERSION}:{session.pk}:{session.created_at.timestamp():.6f}:{session.revision}"
    )


def _resume(session: ChatSession, leaf: Entry, table: SegmentTable) -> tuple[FilesWalk, int]:
    """Return the kept walk of the deepest recent leaf on this leaf's path and the depth to go on from,
    else a new walk from the root."""
    cache = caches["shared"]
    recent: list[tuple[int, int, int]] = cache.get(_recent_key(session)) or []
    if leaf.depth is not None:
        for seq, depth, segment in sorted(recent, key=lambda r: -r[1]):
            if depth > leaf.depth:
                continue
            ranges = path_ranges(session, leaf, min_depth=depth, max_depth=depth, table=table)
            if not any(seg == segment and low <= depth <= high for seg, low, high in ranges):
                continue
            walk = cache.get(_seq_key(session, seq, "walk"))
            if isinstance(walk, FilesWalk):
                return walk, depth + 1
    return FilesWalk(session.cwd), 0


def _keep(session: ChatSession, leaf: Entry, walk: FilesWalk) -> None:
    if leaf.depth is None or leaf.segment is None or walk.content_chars() > WALK_CHARS:
        return
    cache = caches["shared"]
    key = _recent_key(session)
    recent: list[tuple[int, int, int]] = cache.get(key) or []
    recent = [(leaf.seq, leaf.depth, leaf.segment), *(r for r in recent if r[0] != leaf.seq)][:WALKS_KEPT]
    cache.set_many({_seq_key(session, leaf.seq, "walk"): walk, key: recent}, FILES_TTL)


def _commands(found: BranchFiles) -> dict[str, Any]:
    commands = [
        {"entryId": c.entry_id, "command": c.command, "isError": c.is_error, "byUser": c.by_user}
        for c in found.commands[-COMMANDS_SHOWN:]
    ]
    return {"commandCount": len(found.commands), "commands": commands[::-1]}


# A file in the list as kept (a tuple: thousands of them are built, cached and read per leaf, and only
# the newest ``limit`` become objects): absolute, path, its kinds of touch (a bit per ``KIND_ORDER``
# kind), lines added, removed, changes, reads, commands since its text was known (None: not known), and
# its last entry.
Listed = tuple[Any, ...]


def _row(touch: FileTouch) -> Listed:
    since = touch.commands_since if touch.content_known else None
    kinds = sum(1 << i for i, kind in enumerate(KIND_ORDER) if kind in touch.kinds)
    counts = (touch.added, touch.removed, len(touch.changes), len(touch.reads))
    return (touch.absolute, touch.path, kinds, *counts, since, touch.last_entry_id)


def _summary(row: Listed) -> dict[str, Any]:
    """A file as the list shows it: what was done to it, without its diffs or its text."""
    absolute, shown, kinds, added, removed, changes, reads, since, entry_id = row
    return {
        "path": shown,
        "absolute": absolute,
        "kinds": [kind for i, kind in enumerate(KIND_ORDER) if kinds & (1 << i)],
        "added": int(added),
        "removed": int(removed),
        "changeCount": int(changes),
        "readCount": int(reads),
        "lastEntryId": entry_id,
        "contentKnown": since is not None,
        "commandsSince": since,
    }


def _file(touch: FileTouch) -> dict[str, Any]:
    """A file with its changes, newest first, as hunks, and its text when known."""
    return {
        **_summary(_row(touch)),
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


def _key(session: ChatSession, leaf: Entry, part: str) -> str:
    """The cache key of ``part`` at ``leaf``. What a branch did is fixed once its entries are written
    (entries are append-only), so unlike ``state_key`` the key leaves out the session's next seq: appends
    elsewhere, or below the leaf, keep it. A redaction rewrites stored lines and bumps the revision."""
    return _seq_key(session, leaf.seq, part)


def _seq_key(session: ChatSession, seq: int, part: str) -> str:
    created = f"{session.created_at.timestamp():.6f}"
    return f"files-{part}:{FILES_VERSION}:{session.pk}:{created}:{session.revision}:{seq}"


def _file_key(session: ChatSession, leaf: Entry, path: str) -> str:
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()
    return _key(session, leaf, f"file:{digest}")


# SQLite is given a path as one OR term per segment: past this many, the walk reads it instead.
SQLITE_RANGES = 200


_Path = tuple[str, list[Any], list[tuple[int, int, int]]]


def _path(session: ChatSession, leaf: Entry) -> _Path | None:
    """Return the steps on the path to ``leaf`` as a ``FROM`` source (``file_steps.on_path``) with its
    parameters and the path's ranges, when the session's steps reach it, else None (the branch is
    walked)."""
    if leaf.depth is None or not file_steps.complete_through(session, leaf.seq):
        return None
    ranges = path_ranges(session, leaf)
    if not ranges or (connection.vendor != "postgresql" and len(ranges) > SQLITE_RANGES):
        return None
    return (*file_steps.on_path(session.pk, ranges), ranges)


def _summed(session: ChatSession, path: _Path) -> dict[str, Any]:
    """Return the files and commands at a node from the steps on its path: what ``_walked`` gives, from
    a few narrow rows instead of every line of the branch."""
    source, params, _ = path
    table = FileStep._meta.db_table
    where = f"FROM {source} WHERE true"
    # Each step holds its file's totals down the path: a file is its last step's row. What ran since
    # its text was known is the path's count of commands less the count it held then.
    files_sql = (
        "SELECT l.absolute, l.path, l.kinds, l.added_sum, l.removed_sum, l.change_count, l.read_count, "
        "CASE WHEN l.known THEN %s - l.known_commands END, l.entry_id "
        f"FROM (SELECT max(s.seq) AS last {where} AND s.kind <> 'command' "
        # By the path's hash: grouping by its text cost half the query. Two paths of one session with
        # the same 64-bit hash would show as one file.
        f"GROUP BY s.file_hash) g JOIN {table} l ON l.session_id = %s AND l.seq = g.last ORDER BY g.last DESC"
    )
    with connection.cursor() as cursor:
        # The newest command's running count is the path's: steps hold every command.
        cursor.execute(
            f"SELECT s.entry_id, s.command, s.failed, s.by_user, s.commands {where} AND s.kind = 'command' "
            f"ORDER BY s.seq DESC LIMIT {COMMANDS_SHOWN}",
            params,
        )
        newest = cursor.fetchall()
        total = int(newest[0][4]) if newest else 0
        cursor.execute(files_sql, [total, *params, session.pk])
        files = cursor.fetchall()
    commands = [
        {"entryId": entry_id, "command": command, "isError": bool(failed), "byUser": bool(by_user)}
        for entry_id, command, failed, by_user, _ in newest
    ]
    return {"files": files, "commandCount": total, "commands": commands}


def _stepped_file(session: ChatSession, path: _Path, summary: dict[str, Any]) -> dict[str, Any] | None:
    """Return one file's changes and text at a node from the lines of its own steps on the path."""
    absolute, ranges = summary["absolute"], path[2]
    steps = FileStep.objects.filter(
        session=session, file_hash=file_steps.file_hash(absolute), absolute=absolute
    ).values_list("seq", "call_seq", "segment", "depth")
    seqs = {
        seq
        for step, call, segment, depth in steps
        if any(s == segment and low <= depth <= high for s, low, high in ranges)
        for seq in (step, call)
        if seq is not None
    }
    lines = Entry.objects.filter(session=session, seq__in=sorted(seqs)).values_list("seq", "raw")
    walk = FilesWalk(session.cwd)
    walk.feed(_parsed(raw) for _, raw in sorted(lines))
    touch = walk.files.get(absolute)
    if touch is None:
        return None
    touch.commands_since = summary["commandsSince"] or 0
    return _file(touch)


def _listed(session: ChatSession, leaf: Entry) -> dict[str, Any]:
    """Return every file at ``leaf`` without its diffs and text, and the commands. Built once per leaf,
    for every reader: from the steps on its path when they are kept, else by walking the branch (then
    the files the list shows first get their diffs and text under keys of their own, as the walk has
    them at hand)."""
    cache = caches["shared"]
    listed: dict[str, Any] | None = cache.get(_key(session, leaf, "list"))
    if listed is not None:
        return listed
    path = _path(session, leaf)
    if path is not None:
        listed = _summed(session, path)
        cache.set(_key(session, leaf, "list"), listed, FILES_TTL)
        return listed
    found = _walked(session, leaf)
    listed = {"files": [_row(touch) for touch in found.files], **_commands(found)}
    values: dict[str, Any] = {
        _file_key(session, leaf, touch.path): _file(touch) for touch in found.files[:FILES_LIMIT]
    }
    values[_key(session, leaf, "list")] = listed
    cache.set_many(values, FILES_TTL)
    return listed


def files_at(session: ChatSession, leaf: Entry | None, *, limit: int = FILES_LIMIT) -> dict[str, Any]:
    """Return the newest ``limit`` files at ``leaf`` (None: no entries), the most recently touched first."""
    if leaf is None:
        return {
            "leafId": None,
            "files": [],
            "fileCount": 0,
            "hasMore": False,
            "commandCount": 0,
            "commands": [],
        }
    body = _listed(session, leaf)
    files = body["files"]
    return {
        **body,
        "leafId": leaf.entry_id,
        "files": [_summary(row) for row in files[:limit]],
        "fileCount": len(files),
        "hasMore": len(files) > limit,
    }


def file_detail(session: ChatSession, leaf: Entry, path: str) -> dict[str, Any] | None:
    """Return one file's changes (newest first, as hunks) and its content at ``leaf`` when known; ``path``
    as listed or absolute."""
    listed = _listed(session, leaf)["files"]
    row = next((row for row in listed if path in (row[1], row[0])), None)
    if row is None:
        return None
    summary = _summary(row)
    key = _file_key(session, leaf, summary["path"])
    item = caches["shared"].get(key)
    if item is None:  # not built ahead (steps kept, further down the list, or evicted)
        steps = _path(session, leaf)
        if steps is not None:
            item = _stepped_file(session, steps, summary)
        else:
            touch = _walked(session, leaf).file(summary["path"])
            item = _file(touch) if touch is not None else None
        if item is None:
            return None
        caches["shared"].set(key, item, FILES_TTL)
    return {"leafId": leaf.entry_id, "file": item}


def _side(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "kinds": [k for k in KIND_ORDER if any(c.kind == k for c in side.changes)],
        "added": side.added,
        "removed": side.removed,
        "changes": [_change(c) for c in reversed(side.changes)],
        "contentKnown": side.touch.content_known,
    }


def _compared(item: ComparedFile) -> dict[str, Any]:
    diff = None
    if item.content_diff is not None:
        added, removed, hunks = item.content_diff
        diff = {"added": added, "removed": removed, "hunks": [_hunk(h) for h in hunks]}
    return {
        "path": item.path,
        "absolute": item.absolute,
        "left": _side(item.left),
        "right": _side(item.right),
        "sameContent": item.same_content,
        "contentDiff": diff,
    }


def files_compared(
    session: ChatSession, left: Entry, right: Entry, *, limit: int = FILES_LIMIT
) -> dict[str, Any]:
    """Return the files ``left``'s and ``right``'s branches changed after they parted, with each side's
    diffs: changed only on the left, only on the right, or on both; each list the most recently changed
    first, ``limit`` files long at most. Built once per pair of nodes, like the files of one node."""
    key = _key(session, left, f"compare:{right.seq}")
    body: dict[str, Any] | None = caches["shared"].get(key)
    if body is None:
        found = compare_files(_walked(session, left), _walked(session, right))
        body = {
            "onlyLeft": [_compared(f) for f in found.only_left],
            "onlyRight": [_compared(f) for f in found.only_right],
            "both": [_compared(f) for f in found.both],
            "sharedChanges": found.shared_changes,
        }
        caches["shared"].set(key, body, FILES_TTL)
    lists = ("onlyLeft", "onlyRight", "both")
    return {
        **body,
        **{name: body[name][:limit] for name in lists},
        "leafId": left.entry_id,
        "againstId": right.entry_id,
        "counts": {name: len(body[name]) for name in lists},
        "hasMore": any(len(body[name]) > limit for name in lists),
    }
