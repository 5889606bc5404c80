"""The session tree: who is whose parent, the path to a leaf, labels and the session name.

Entries never change parent, so every fact that folds along the root→entry path (depth, segment,
latest compaction, latest model or thinking change) is fixed when the entry is appended. Parent
cycles, possible only with duplicate ids in an imported file, are broken deterministically so that
every walk ends; Pi itself would loop forever on them.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pitree.entries import Entry, anchor_of
from pitree.jsjson import JS_WHITESPACE, UNDEFINED
from pitree.jssort import js_sort
from pitree.timestamps import js_date_ms

__all__ = ["FactsTable", "PathFacts", "Segment", "SessionTree", "js_trim"]


def _js_map_key(value: object) -> object:
    """Return a key that is equal where JavaScript's Map (SameValueZero) finds two ids equal."""
    if value is UNDEFINED or value is None or isinstance(value, str | bool):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", float(value))  # 1 and 1.0 are one number in JavaScript
    return ("object", id(value))  # objects and arrays are equal only to themselves


def js_trim(text: str) -> str:
    """Return ``text.trim()`` as JavaScript trims."""
    return text.strip(JS_WHITESPACE)


@dataclass(frozen=True, slots=True)
class Segment:
    """A maximal run of entries where each is the first child of the previous one."""

    index: int
    parent_segment: int | None
    start_depth: int


@dataclass(frozen=True, slots=True)
class PathFacts:
    """Per-entry facts folded along the root→entry path (positions are indexes into the entries)."""

    depth: int
    segment: int
    compaction: int  # latest compaction at or above the entry, -1 if none
    model: int  # latest model_change or assistant message, -1 if none
    thinking: int  # latest thinking_level_change, -1 if none


@dataclass(slots=True)
class SessionTree:
    """An index over a session's entries in append order."""

    entries: Sequence[Entry]
    by_id: dict[str, int] = field(init=False)
    parent: list[int] = field(init=False)  # effective parent position, -1 for a root
    broken_cycles: list[int] = field(init=False)  # positions whose parent link was ignored

    def __post_init__(self) -> None:
        by_id: dict[str, int] = {}
        for pos, entry in enumerate(self.entries):
            if entry.id is not None:
                by_id[entry.id] = pos  # a later duplicate wins, as in Pi
        self.by_id = by_id
        raw = [
            -1 if e.id is None or e.parent_id is None else by_id.get(e.parent_id, -1) for e in self.entries
        ]
        self.parent, self.broken_cycles = _break_cycles(raw)

    # -- lookups ---------------------------------------------------------------------------------

    def entry_count(self) -> int:
        """Return how many entries Pi counts: its id index's size (``byId.size``), stray headers aside.

        A duplicated id counts once, and every line without an id counts once together (JavaScript's
        ``undefined`` key); ``null``, a number and a string are keys of their own.
        """
        keys: set[object] = set()
        for e in self.entries:
            payload = e.payload
            if isinstance(payload, dict) and payload.get("type") == "session":
                continue
            keys.add(_js_map_key(payload.get("id", UNDEFINED) if isinstance(payload, dict) else UNDEFINED))
        return len(keys)

    def get(self, entry_id: str) -> Entry | None:
        pos = self.by_id.get(entry_id)
        return None if pos is None else self.entries[pos]

    def last_leaf_id(self) -> str | None:
        """Return the id of the last entry that takes part in the tree (Pi's leaf after loading)."""
        for entry in reversed(self.entries):
            if entry.id is not None:
                return entry.id
        return None

    def path_positions(self, leaf_id: str | None) -> list[int]:
        """Return positions root→leaf; an unknown leaf gives an empty path."""
        if leaf_id is None:
            return []
        pos = self.by_id.get(leaf_id)
        if pos is None:
            return []
        out: list[int] = []
        while pos != -1:
            out.append(pos)
            pos = self.parent[pos]
        out.reverse()
        return out

    def path(self, leaf_id: str | None) -> list[Entry]:
        return [self.entries[p] for p in self.path_positions(leaf_id)]

    def resolve_leaf(self, leaf_arg: str | None, *, explicit_null: bool = False) -> str | None:
        """Pick the leaf as ``buildSessionPath`` does: null → none, unknown or absent → last entry."""
        if explicit_null:
            return None
        if leaf_arg is not None and leaf_arg in self.by_id:
            return leaf_arg
        return self.last_leaf_id()

    def deepest_common_ancestor(self, a: str | None, b: str | None) -> str | None:
        """Return the deepest entry on both paths, or None."""
        if a is None or b is None:
            return None
        on_a = {self.entries[p].id for p in self.path_positions(a)}
        for pos in reversed(self.path_positions(b)):
            if self.entries[pos].id in on_a:
                return self.entries[pos].id
        return None

    # -- labels and name -------------------------------------------------------------------------

    def labels(self) -> tuple[dict[str, str], dict[str, Any]]:
        """Return (label by target, label timestamp by target); the latest label entry wins."""
        labels: dict[str, str] = {}
        stamps: dict[str, Any] = {}
        for entry in self.entries:
            if entry.type != "label" or not isinstance(entry.payload, dict):
                continue
            target = entry.payload.get("targetId")
            if not isinstance(target, str):
                continue
            label = entry.payload.get("label")
            if isinstance(label, str) and label:
                # A re-set keeps its place, as in a JavaScript Map; a re-set after a clear moves it last.
                labels[target] = label
                stamps[target] = entry.payload.get("timestamp", UNDEFINED)  # absent stays absent
            else:
                labels.pop(target, None)
                stamps.pop(target, None)
        return labels, stamps

    def session_name(self) -> str | None:
        """Return the trimmed name of the latest ``session_info`` entry, or None."""
        for entry in reversed(self.entries):
            if entry.type == "session_info" and isinstance(entry.payload, dict):
                name = entry.payload.get("name")
                return (js_trim(name) or None) if isinstance(name, str) else None
        return None

    # -- tree shape ------------------------------------------------------------------------------

    def children(self) -> dict[int, list[int]]:
        """Return child positions by parent position, in append order."""
        kids: dict[int, list[int]] = {}
        for pos, parent in enumerate(self.parent):
            if parent != -1 and self.entries[pos].id is not None:
                kids.setdefault(parent, []).append(pos)
        return kids

    def roots(self) -> list[int]:
        return [p for p, parent in enumerate(self.parent) if parent == -1 and self.entries[p].id is not None]

    def sorted_children(self) -> dict[int, list[int]]:
        """Return children ordered by timestamp as Pi's tree view orders them (stable)."""
        kids = self.children()
        for parent, positions in kids.items():
            if len(positions) > 1:
                kids[parent] = js_sort(positions, self._by_time)
        return kids

    def children_in_tree_order(self) -> list[tuple[int, list[int]]]:
        """Return (parent, children) for every entry with children, in Pi's tree walk order.

        Pi lists the tree depth first from each root, each entry's children oldest first (a stable sort
        on the timestamp, so equal or unreadable times keep file order).
        """
        kids = self.sorted_children()
        out: list[tuple[int, list[int]]] = []
        stack = list(reversed(self.roots()))
        while stack:
            pos = stack.pop()
            children = kids.get(pos)
            if children:
                out.append((pos, children))
                stack.extend(reversed(children))
        return out

    def _by_time(self, a: int, b: int) -> int:
        # An absent time is undefined to JavaScript (NaN), unlike null (0).
        ta = js_date_ms(self.entries[a].get("timestamp", UNDEFINED))
        tb = js_date_ms(self.entries[b].get("timestamp", UNDEFINED))
        diff = ta - tb
        if diff != diff or diff == 0:
            return 0
        return -1 if diff < 0 else 1

    # -- path facts --------------------------------------------------------------------------------

    def path_facts(self) -> tuple[FactsTable, list[Segment]]:
        """Compute every entry's folded path facts and the segment table, parents before children."""
        n = len(self.entries)
        table = FactsTable(n)
        depths, segs, comps, models, thinks = table.columns()
        segments: list[Segment] = []
        segment_tip: list[int] = []  # position of the deepest entry of each segment
        kids = self.children()
        queue: deque[int] = deque(self.roots())
        while queue:
            pos = queue.popleft()
            entry = self.entries[pos]
            parent = self.parent[pos]
            if parent == -1:
                depth = 0
                segment = len(segments)
                segments.append(Segment(segment, None, 0))
                segment_tip.append(pos)
                compaction = model = thinking = -1
            else:
                assert depths[parent] >= 0
                depth = depths[parent] + 1
                up = segs[parent]
                if segment_tip[up] == parent:
                    segment = up
                    segment_tip[segment] = pos
                else:
                    segment = len(segments)
                    segments.append(Segment(segment, up, depth))
                    segment_tip.append(pos)
                compaction, model, thinking = comps[parent], models[parent], thinks[parent]
            kind = anchor_of(entry)
            if kind == "compaction_seq":
                compaction = pos
            elif kind == "model_seq":
                model = pos
            elif kind == "thinking_seq":
                thinking = pos
            depths[pos], segs[pos], comps[pos], models[pos], thinks[pos] = (
                depth,
                segment,
                compaction,
                model,
                thinking,
            )
            queue.extend(kids.get(pos, ()))
        missing = [p for p in range(n) if depths[p] < 0 and self.entries[p].id is not None]
        assert not missing, "every tree entry is reachable from a root once cycles are broken"
        return table, segments


class FactsTable:
    """Every entry's path facts (None for an entry outside the tree), a column of machine integers each:
    an object per entry held 25 MB of a 100k-entry import."""

    __slots__ = ("compaction", "depth", "model", "segment", "thinking")

    def __init__(self, n: int) -> None:
        self.depth = array("q", [-1]) * n  # -1: outside the tree
        self.segment = array("q", [0]) * n
        self.compaction = array("q", [-1]) * n
        self.model = array("q", [-1]) * n
        self.thinking = array("q", [-1]) * n

    def columns(self) -> tuple[array[int], array[int], array[int], array[int], array[int]]:
        """Return (depth, segment, compaction, model, thinking), by entry position."""
        return self.depth, self.segment, self.compaction, self.model, self.thinking

    def __len__(self) -> int:
        return len(self.depth)

    def __getitem__(self, pos: int) -> PathFacts | None:
        if self.depth[pos] < 0:
            return None
        return PathFacts(
            self.depth[pos], self.segment[pos], self.compaction[pos], self.model[pos], self.thinking[pos]
        )

    def __iter__(self) -> Iterator[PathFacts | None]:
        return (self[pos] for pos in range(len(self.depth)))


def _break_cycles(raw_parent: list[int]) -> tuple[list[int], list[int]]:
    """Return parents with every cycle cut at its earliest entry, and the cut positions."""
    n = len(raw_parent)
    parent = list(raw_parent)
    state = bytearray(n)  # 0 unseen, 1 on the current walk, 2 done
    broken: list[int] = []
    for start in range(n):
        if state[start]:
            continue
        walk: list[int] = []
        pos = start
        while pos != -1 and state[pos] == 0:
            state[pos] = 1
            walk.append(pos)
            pos = parent[pos]
        if pos != -1 and state[pos] == 1:
            # The earliest member was an orphan when it was written (its parent came later): it is the root.
            cut = min(walk[walk.index(pos) :])
            parent[cut] = -1
            broken.append(cut)
        for p in walk:
            state[p] = 2
    return parent, broken
