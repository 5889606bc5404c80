"""Match the lines of a local Pi file to the stored ones by identity (entry id and bytes), never by position.

Two machines that share the start of a session and then diverge send lines the server partly holds: a
line whose id is stored with the same bytes is known; a new id is stored under its own parent, so the
two tails become two branches of one tree; the same id with other bytes is a conflict.

Two kinds of local line are not stored as they are:

- The leaf marker (``custom``, ``customType: "piweb.leaf"``) that a pull writes so Pi resumes at the
  right node. It is the client's bookkeeping, not the session's: it is dropped, and the id it had
  becomes an alias of the node it points at, so Pi's next line (whose parent is the marker) is stored
  under that node.
- A line Pi rewrote when it migrated an old file (version 1 and 2 files get fresh random ids). The
  server stored the same line when it migrated the file itself, under its own ids. On a restart of the
  file (``reset``), a line with an unknown id whose content (everything but its id, with references
  resolved through the aliases) equals a stored line at the same place in the tree *is* that line: its
  id becomes an alias of the stored one and nothing is stored twice.

A stored line whose parent (or compaction start, or label target) is an alias names the stored id
instead, so the server's file is a tree Pi can load. Comparisons resolve the local line the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pitree.jsjson import js_stringify
from pitree.leaf_marker import LEAF_MARKER_TYPE
from pitree.redacted import is_redaction_of

__all__ = ["Line", "Plan", "content_key", "is_leaf_marker", "plan_lines", "resolve"]

# The fields of an entry that name another entry: resolved through the aliases before storing.
REFERENCES = ("parentId", "firstKeptEntryId", "targetId")


@dataclass(frozen=True, slots=True)
class Line:
    number: int  # line number after the header, from 1 (for messages)
    raw: str  # the verbatim line, without its line ending
    value: dict[str, Any]


@dataclass(slots=True)
class Plan:
    new: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (line to store, its value)
    known: int = 0
    markers: int = 0
    conflicts: list[str] = field(default_factory=list)  # ids stored with other bytes
    aliases: dict[str, str] = field(default_factory=dict)  # new aliases: local id -> stored id
    leaf_marker: str | None = None  # the stored node the batch's last line (a marker) points at


def is_leaf_marker(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "custom"
        and value.get("customType") == LEAF_MARKER_TYPE
        and isinstance(value.get("id"), str)
    )


def resolve(entry_id: str, aliases: Mapping[str, str]) -> str:
    """Follow aliases to a stored id (a marker may point at another marker); bounded against cycles."""
    for _ in range(64):
        target = aliases.get(entry_id)
        if target is None or target == entry_id:
            return entry_id
        entry_id = target
    return entry_id


def _resolved(line: Line, aliases: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The line as the server stores it: references through aliases replaced by the stored ids."""
    changes = {
        key: resolve(line.value[key], aliases)
        for key in REFERENCES
        if isinstance(line.value.get(key), str) and line.value[key] in aliases
    }
    changes = {k: v for k, v in changes.items() if v != line.value[k]}
    if not changes:
        return line.raw, line.value
    value = {**line.value, **changes}
    raw = line.raw
    for key, target in changes.items():
        # Pi writes compact JSON, so the field appears as this exact text; replacing it keeps every
        # other byte of the line as Pi wrote it. Anything else is written again as JSON.stringify would.
        needle = f'"{key}":{json.dumps(line.value[key], ensure_ascii=False)}'
        if raw.count(needle) != 1:
            return js_stringify(value), value
        raw = raw.replace(needle, f'"{key}":{json.dumps(target, ensure_ascii=False)}')
    return raw, value


def content_key(value: Mapping[str, Any]) -> str:
    """A line's identity apart from its own id: what a migration keeps when it assigns new ids."""
    return json.dumps({k: v for k, v in value.items() if k != "id"}, sort_keys=True, ensure_ascii=False)


def plan_lines(
    lines: Sequence[Line],
    *,
    stored: Mapping[str, set[str]],
    aliases: Mapping[str, str],
    by_content: Mapping[str, str] | None = None,
) -> Plan:
    """Decide, line by line in file order, what is known, new, an alias or a conflict.

    ``stored`` gives the stored lines of the ids the batch names; ``aliases`` the aliases recorded by
    earlier pushes; ``by_content`` (only when the file restarted) maps the content key of stored lines
    to their id, to recognise lines Pi gave new ids when it migrated the file.
    """
    plan = Plan()
    all_aliases = dict(aliases)
    fresh: dict[str, str] = {}  # ids new in this batch -> the line stored
    fresh_loose: set[str] = set()  # new lines outside the tree (no id)
    claimed: set[str] = set()
    last_tree_line: str | None = None
    for line in lines:
        entry_id = line.value.get("id")
        if not isinstance(entry_id, str) or line.value.get("type") == "session":
            if line.raw in stored.get("", set()) or line.raw in fresh_loose:
                plan.known += 1
            else:
                plan.new.append((line.raw, line.value))
                fresh_loose.add(line.raw)
            continue
        if entry_id not in stored and entry_id not in fresh and is_leaf_marker(line.value):
            parent = line.value.get("parentId")
            if isinstance(parent, str):
                target = resolve(parent, all_aliases)
                if target != entry_id and all_aliases.get(entry_id) != target:
                    all_aliases[entry_id] = target
                    plan.aliases[entry_id] = target
                last_tree_line = target
            plan.markers += 1
            continue
        raw, value = _resolved(line, all_aliases)
        last_tree_line = None
        if entry_id in stored:
            if (
                raw in stored[entry_id]
                or line.raw in stored[entry_id]
                or any(is_redaction_of(s, line.raw) for s in stored[entry_id])
            ):
                plan.known += 1
            else:
                plan.conflicts.append(entry_id)
            continue
        if entry_id in fresh:
            if fresh[entry_id] == raw:
                plan.known += 1  # the same line twice in the file
            else:
                plan.conflicts.append(entry_id)
            continue
        if entry_id in all_aliases:
            plan.known += 1  # a migrated line recognised by an earlier push
            continue
        if by_content is not None:
            match = by_content.get(content_key(value))
            if match is not None and match not in claimed and match != entry_id:
                claimed.add(match)
                all_aliases[entry_id] = match
                plan.aliases[entry_id] = match
                plan.known += 1
                continue
        plan.new.append((raw, value))
        fresh[entry_id] = raw
    plan.leaf_marker = last_tree_line
    return plan
