"""The one append step: which entries may be stored, and where each one lands in the session's tree.

Every write path (import, sync, the API's append, runs, labels, summaries, forks) stores entries
through a storage backend that asks this module twice: ``prepare`` (or ``check_fields`` for lines kept
verbatim) says whether the entries may be stored, and ``place`` says where each lands given what is
stored already. The PostgreSQL backend sends a chain to the database in one round trip: it takes the
chain's placement relative to its parent from ``relative_chain`` (this same ``place``) and lets the
database add the parent's facts, which it knows only under the session's lock.

The placement rule: an entry hangs under its parent, one deeper, with its parent's path anchors; it
continues its parent's segment when the parent is that segment's tip and opens a new segment otherwise;
an entry whose parent is unknown (or that has none) is a new root, at depth 0, in a new segment. An entry
that is a compaction, a model change (or an assistant answer, which names its model) or a thinking-level
change is its own anchor of that kind.

Pure Python: no framework imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pitree.entries import ANCHORS, Entry, anchor_of
from pitree.jsonl import generate_entry_id
from pitree.storable import (
    FIELD_CAPS,
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_LABEL_CHARS,
    check_fields,
    check_json,
)
from pitree.timestamps import now_iso
from pitree.tree import js_trim

__all__ = [
    "ANCHORS",
    "FIELD_CAPS",
    "MAX_ID_CHARS",
    "MAX_KEY_CHARS",
    "MAX_LABEL_CHARS",
    "Counters",
    "InvalidEntries",
    "ParentFacts",
    "Placed",
    "Placement",
    "Prepared",
    "SegmentTip",
    "anchor_of",
    "check_fields",
    "place",
    "prepare",
    "relative_chain",
    "resolve",
]


class InvalidEntries(ValueError):
    """Entries offered for append break the tree's rules, or a field passes its cap (a 400)."""


# -- entries offered for append ---------------------------------------------------------------------------

_ABSENT: Any = ...  # no parentId given: under the entry before, or the leaf for the first


@dataclass(slots=True)
class Prepared:
    """Validated entries in Pi's key order. ``parents[i]`` is what entry i asked for (``...``: none given).

    Ids not given are drawn by ``resolve``; until then they are ``None``.
    """

    values: list[dict[str, Any]]
    explicit: list[bool]
    parents: list[Any]

    @property
    def chain(self) -> bool:
        """Whether each entry after the first hangs under the one before it."""
        for i in range(1, len(self.values)):
            asked = self.parents[i]
            before = self.values[i - 1]["id"] if self.explicit[i - 1] else None
            if asked is not _ABSENT and not (isinstance(asked, str) and asked == before):
                return False
        return True

    @property
    def first_parent(self) -> Any:
        return self.parents[0]


def prepare(entries: Sequence[Any]) -> Prepared:
    """Validate entries offered for append: objects, a type, well-formed ids and parents, fields in caps.

    The timestamp is filled in when missing. What needs the stored session (ids already taken, parents
    that exist) is ``resolve``'s.
    """
    if not entries:
        raise InvalidEntries("no entries to append")
    values: list[dict[str, Any]] = []
    explicit: list[bool] = []
    parents: list[Any] = []
    batch: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"entry {index}"
        if not isinstance(entry, dict):
            raise InvalidEntries(f"{where}: an entry must be a JSON object")
        check_json(entry, where, max_depth=MAX_DEPTH, strings=False)
        # The caps and storability first: no later message quotes a value that could not be shown.
        check_fields(entry, where)
        kind = entry.get("type")
        if not isinstance(kind, str) or not kind or kind == "session":
            raise InvalidEntries(f"{where}: 'type' must be a non-empty string other than 'session'")
        entry_id = entry.get("id")
        if entry_id is not None:
            if not isinstance(entry_id, str) or not entry_id:
                raise InvalidEntries(f"{where}: 'id' must be a non-empty string")
            if entry_id in batch:
                raise InvalidEntries(f"{where}: id {entry_id!r} already exists in this session")
            batch.add(entry_id)
        parent = entry.get("parentId", _ABSENT)
        if parent is not _ABSENT and parent is not None and not isinstance(parent, str):
            raise InvalidEntries(f"{where}: 'parentId' must be a string or null")
        stamp = entry.get("timestamp")
        if stamp is None:
            stamp = now_iso()
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        values.append({"type": kind, "id": entry_id, "parentId": None, "timestamp": stamp, **rest})
        explicit.append(entry_id is not None)
        parents.append(parent)
    return Prepared(values, explicit, parents)


def draw_ids(prepared: Prepared, avoid: set[str]) -> None:
    """Give every entry without an id a fresh one that is not in ``avoid`` nor in the batch."""
    taken = set(avoid) | {v["id"] for v in prepared.values if v["id"] is not None}
    for value, given in zip(prepared.values, prepared.explicit, strict=True):
        if not given:
            value["id"] = generate_entry_id(taken)
            taken.add(value["id"])


def link(prepared: Prepared, leaf: str | None) -> None:
    """Fill in every parentId: as asked, or the entry before (the leaf for the first)."""
    before = leaf
    for value, asked in zip(prepared.values, prepared.parents, strict=True):
        value["parentId"] = before if asked is _ABSENT else asked
        before = value["id"]


def resolve(prepared: Prepared, leaf: str | None, known: set[str]) -> list[dict[str, Any]]:
    """Check the batch against the ids ``known`` in the session, draw missing ids, fill in parents.

    ``known`` must hold every stored id among the batch's ids, parents and ``leaf``. Ids are checked
    entry by entry, an entry's id before its parent, so the first problem is the one reported.
    """
    draw_ids(prepared, known)
    link(prepared, leaf)
    batch: set[str] = set()
    for index, value in enumerate(prepared.values):
        where = f"entry {index}"
        entry_id = value["id"]
        if prepared.explicit[index] and entry_id in known:
            raise InvalidEntries(f"{where}: id {entry_id!r} already exists in this session")
        parent = value["parentId"]
        if parent is not None and parent not in batch and parent not in known:
            raise InvalidEntries(f"{where}: parent {parent!r} is not an entry of this session")
        batch.add(entry_id)
    return prepared.values


def wanted_ids(prepared: Prepared, leaf: str | None) -> set[str]:
    """Return the ids whose presence in the session ``resolve`` needs to know."""
    wanted = {v["id"] for v in prepared.values if v["id"] is not None}
    wanted |= {p for p in prepared.parents if isinstance(p, str)}
    if leaf is not None:
        wanted.add(leaf)
    return wanted


# -- where entries land -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParentFacts:
    """A stored entry's folded path facts, and whether it is the tip of its segment."""

    seq: int
    depth: int
    segment: int
    compaction_seq: int | None
    model_seq: int | None
    thinking_seq: int | None
    tip: bool


@dataclass(slots=True)
class Counters:
    """The session row's counters an append moves."""

    next_seq: int
    next_segment: int
    entry_count: int
    message_count: int
    name: str
    leaf_id: str | None
    leaf_seq: int | None


@dataclass(frozen=True, slots=True)
class Placed:
    """Where one entry lands: its row's folded facts (all None for a line outside the tree)."""

    seq: int
    parent_seq: int | None = None
    depth: int | None = None
    segment: int | None = None
    compaction_seq: int | None = None
    model_seq: int | None = None
    thinking_seq: int | None = None


@dataclass(slots=True)
class SegmentTip:
    """A segment the append opened (``opened``) or extended, as it stands afterwards."""

    index: int
    parent_index: int | None
    start_depth: int
    first_seq: int | None
    tip_seq: int
    tip_depth: int
    opened: bool


@dataclass(slots=True)
class Placement:
    rows: list[Placed]
    segments: dict[int, SegmentTip]
    counters: Counters


def place(
    entries: Sequence[Entry],
    parents: Mapping[str, ParentFacts],
    counters: Counters,
    *,
    move_leaf: bool = True,
) -> Placement:
    """Decide where each entry lands after what is stored, and how the session's counters move.

    ``parents`` gives the facts of the stored entries the batch names as parents (the newest row of
    an id). Entries are placed in order, so one may hang under an earlier one of the batch.
    """
    after = replace(counters)
    known: dict[str, ParentFacts] = dict(parents)
    segments: dict[int, SegmentTip] = {}
    rows: list[Placed] = []
    for entry in entries:
        seq = after.next_seq
        after.next_seq += 1
        if entry.id is None:
            rows.append(Placed(seq))
            continue
        parent = known.get(entry.parent_id) if entry.parent_id is not None else None
        if parent is None:
            anchors: list[int | None] = [None, None, None]
            depth, parent_seq = 0, None
            segment = _open(segments, after, None, 0, seq)
        else:
            depth, parent_seq = parent.depth + 1, parent.seq
            anchors = [parent.compaction_seq, parent.model_seq, parent.thinking_seq]
            current = segments.get(parent.segment)
            is_tip = current.tip_seq == parent.seq if current is not None else parent.tip
            if is_tip:
                segment = parent.segment
                if current is None:
                    segments[segment] = SegmentTip(segment, None, 0, None, seq, depth, opened=False)
                else:
                    current.tip_seq, current.tip_depth = seq, depth
            else:
                segment = _open(segments, after, parent.segment, depth, seq)
        kind = anchor_of(entry)
        if kind is not None:
            anchors[ANCHORS.index(kind)] = seq
        placed = Placed(seq, parent_seq, depth, segment, *anchors)
        rows.append(placed)
        known[entry.id] = ParentFacts(seq, depth, segment, anchors[0], anchors[1], anchors[2], tip=True)
    after.entry_count += len(entries)
    after.message_count += sum(1 for e in entries if e.type == "message")
    for entry in entries:
        if entry.type == "session_info":
            name = entry.get("name")
            after.name = (js_trim(name) if isinstance(name, str) else "") or ""
    last = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].id is not None), None)
    if move_leaf and last is not None:
        after.leaf_id, after.leaf_seq = entries[last].id, counters.next_seq + last
    return Placement(rows, segments, after)


def _open(
    segments: dict[int, SegmentTip], counters: Counters, parent: int | None, depth: int, seq: int
) -> int:
    index = counters.next_segment
    counters.next_segment += 1
    segments[index] = SegmentTip(index, parent, depth, seq, seq, depth, opened=True)
    return index


# The stand-in parent of ``relative_chain``: seq -1 and depth -1 make every placed value an offset.
_BASE = "\x00base"


def relative_chain(entries: Sequence[Entry]) -> list[Placed]:
    """Place a chain relative to its parent: seqs from 0, depths from 0 below it, anchors in the batch.

    A chain's first entry hangs under one stored entry (or none) and every other under the one before,
    so its placement is the parent's facts plus these offsets; an anchor of None is the parent's own.
    The PostgreSQL backend adds the parent's facts under the lock.
    """
    linked = [
        replace(e, id=f"\x00{i}", parent_id=_BASE if i == 0 else f"\x00{i - 1}")
        for i, e in enumerate(entries)
    ]
    base = ParentFacts(-1, -1, 0, None, None, None, tip=True)
    counters = Counters(0, 1, 0, 0, "", None, None)
    return place(linked, {_BASE: base}, counters).rows
