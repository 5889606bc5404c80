"""The tree as Pi lists it: roots and each entry's children, walked depth first, oldest child first.

Pi indexes entries by their ``id`` value whatever it is: a line that is not an object, or an object
without an id, is keyed by ``undefined``, and a duplicated id names its last entry. Every entry then
hangs its id's node under its parent's node (or among the roots when its parent is null, missing,
or itself). So a duplicate id lists the same node twice, and lines without ids list as ``null``
roots. ``SessionTree`` keeps such lines out of the tree for paths and projections; this module only
reproduces the listing. When the listing holds a parent cycle Pi's walk never ends; piweb then lists
``SessionTree``'s cut tree instead (a deliberate difference, see the README).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from pitree.entries import Entry
from pitree.jsjson import UNDEFINED
from pitree.jssort import js_sort
from pitree.timestamps import js_date_ms

__all__ = ["TreeListing", "tree_listing"]


@dataclass(frozen=True, slots=True)
class TreeListing:
    """Roots and (parent, children) pairs as entry positions, in Pi's order; ``cycle`` when Pi would loop."""

    roots: list[int]
    children: list[tuple[int, list[int]]]
    cycle: bool


def _key(value: Any, position: int) -> Hashable:
    """Return a key that is equal exactly when JavaScript's Map (SameValueZero) finds the same key."""
    if value is UNDEFINED:
        return ("undefined",)
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, str):
        return ("string", value)
    return ("object", position)  # objects and arrays are only ever equal to themselves


def _field(entry: Entry, name: str) -> Any:
    return entry.payload.get(name, UNDEFINED) if isinstance(entry.payload, dict) else UNDEFINED


def _is_header(entry: Entry) -> bool:
    return isinstance(entry.payload, dict) and entry.payload.get("type") == "session"


def tree_listing(entries: Sequence[Entry]) -> TreeListing:
    """Return Pi's tree listing of ``entries`` (append order, stray headers included and skipped)."""
    counted = [pos for pos, e in enumerate(entries) if not _is_header(e)]
    node_of: dict[Hashable, int] = {}
    for pos in counted:
        node_of[_key(_field(entries[pos], "id"), pos)] = pos  # the last entry with an id is its node
    roots: list[int] = []
    kids: dict[int, list[int]] = {}
    for pos in counted:
        entry = entries[pos]
        node = node_of[_key(_field(entry, "id"), pos)]
        parent_value = _field(entry, "parentId")
        parent_key = _key(parent_value, -1 - pos)
        if parent_value is None or parent_key == _key(_field(entry, "id"), pos):
            roots.append(node)
        elif parent_key in node_of:
            kids.setdefault(node_of[parent_key], []).append(node)
        else:
            roots.append(node)
    if _has_cycle(roots, kids):
        return TreeListing(roots, [], cycle=True)
    ordered = {
        parent: js_sort(children, lambda a, b: _compare_times(entries[a], entries[b]))
        for parent, children in kids.items()
    }
    out: list[tuple[int, list[int]]] = []
    stack = list(reversed(roots))
    while stack:
        pos = stack.pop()
        children = ordered.get(pos)
        if children:
            out.append((pos, children))
            stack.extend(reversed(children))
    return TreeListing(roots, out, cycle=False)


def _compare_times(a: Entry, b: Entry) -> int:
    diff = js_date_ms(_field(a, "timestamp")) - js_date_ms(_field(b, "timestamp"))
    if diff != diff or diff == 0:  # NaN compares as equal: the stable sort keeps file order
        return 0
    return -1 if diff < 0 else 1


def _has_cycle(roots: list[int], kids: dict[int, list[int]]) -> bool:
    """Return whether a node reachable from the roots leads back to itself (Pi's walk never ends)."""
    state: dict[int, int] = {}  # 1 on the current walk, 2 done
    for root in dict.fromkeys(roots):
        if root in state:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, at = stack[-1]
            children = kids.get(node, [])
            if at == len(children):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, at + 1)
            child = children[at]
            seen = state.get(child)
            if seen == 1:
                return True
            if seen is None:
                state[child] = 1
                stack.append((child, 0))
    return False
