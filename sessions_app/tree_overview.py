"""A flat, render-ready overview of a session tree, built from the segment table and a few entry rows.

Segments already are the tree's linear runs (each entry the first child of the one before), so the
shape comes from the segment table alone. Entries are read only where drawing needs them: branch
points, tree leaves, the session leaf, labeled, compaction, branch-summary and context-edited entries,
and the two ends of each folded run between them. Payloads are read only for label and context_edit
entries, so a 100k-entry session with a few hundred branches answers with a small payload.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection

from pitree.jsjson import UNDEFINED, parse_json
from pitree.jssort import js_sort
from pitree.timestamps import js_date_ms
from sessions_app.models import ChatSession, Entry, Segment
from sessions_app.queries import find_entry, join_entries

__all__ = ["AROUND", "SEGMENT_PAGE", "TreeOrder", "build_tree_overview", "tree_order"]

AROUND = 50  # entries expanded on each side of ?around=
SEGMENT_PAGE = 1000  # entries expanded from the start of ?segment=
# Items carry only what drawing needs: a 100k-entry tree with hundreds of branches stays under 200 KB.
_FIELDS = ("seq", "entry_id", "parent_id", "type", "role", "depth", "segment")
_ORDER_FIELDS = ("segment", "depth", "seq", "timestamp")


@dataclass(frozen=True, slots=True)
class _Row:
    seq: int
    entry_id: str
    parent_id: str | None
    type: str
    role: str
    depth: int
    segment: int


@dataclass(frozen=True, slots=True)
class _Seg:
    index: int
    parent: int | None
    start: int
    tip_depth: int


def build_tree_overview(
    session: ChatSession, *, around: str | None = None, segment: int | None = None
) -> dict[str, Any]:
    """Return the overview: folded runs and the nodes between them, in drawing order (no nesting)."""
    segs, children_at = _segments(session)
    depths: dict[int, set[int]] = {i: {s.tip_depth} for i, s in segs.items()}
    for parent, depth in children_at:
        depths[parent].add(depth)

    rows: dict[tuple[int, int], _Row] = {}

    def keep(found: Iterable[_Row], *, shown: bool = True) -> list[_Row]:
        kept = []
        for row in found:
            if row.segment in segs:
                rows[(row.segment, row.depth)] = row
                if shown:
                    depths[row.segment].add(row.depth)
                kept.append(row)
        return kept

    base = Entry.objects.filter(session=session, segment__isnull=False)
    keep(_rows(base.filter(type__in=("compaction", "branch_summary"))))
    labels, edits = _labels_and_edits(session)
    # Sorted here: an ORDER BY seq made SQLite without statistics walk the whole session by seq.
    named = sorted(_rows(base.filter(entry_id__in=[*labels, *edits])), key=lambda r: r.seq)
    targets = {r.entry_id: r for r in named}
    keep(targets.values())
    leaf = (
        next(iter(keep(_rows(base.filter(seq=session.leaf_seq)))), None)
        if session.leaf_seq is not None
        else None
    )

    expanded: list[tuple[int, int, int]] = []
    if around is not None:
        row = find_entry(session, around)
        if row.segment is not None and row.depth is not None and row.segment in segs:
            s = segs[row.segment]
            expanded.append((s.index, max(s.start, row.depth - AROUND), min(s.tip_depth, row.depth + AROUND)))
    if segment is not None and segment in segs:
        s = segs[segment]
        expanded.append((s.index, s.start, min(s.tip_depth, s.start + SEGMENT_PAGE - 1)))
    for index, low, high in expanded:
        keep(_rows(base.filter(segment=index, depth__gte=low, depth__lte=high)))

    # The two ends of every gap between interesting depths are the ends of a folded run.
    wanted: set[tuple[int, int]] = set()
    for index, s in segs.items():
        previous = s.start - 1
        for depth in sorted(depths[index]):
            if depth > previous + 1:
                wanted.update({(index, previous + 1), (index, depth - 1)})
            previous = depth
        wanted.update((index, d) for d in depths[index])
    keep(_rows_at(session, [w for w in wanted if w not in rows]), shown=False)

    on_path: dict[int, int] = {}  # segment → deepest depth of the current path in it
    if leaf is not None and leaf.depth is not None:
        walking: int | None = leaf.segment
        high = leaf.depth
        while walking is not None and walking in segs:
            on_path[walking] = high
            high = segs[walking].start - 1
            walking = segs[walking].parent

    def pieces(index: int) -> list[dict[str, Any]]:
        s = segs[index]
        out: list[dict[str, Any]] = []
        previous = s.start - 1
        path_high = on_path.get(index, -1)
        for depth in sorted(depths[index]):
            if depth < s.start or depth > s.tip_depth:
                continue
            if depth > previous + 1:
                first, last = rows[(index, previous + 1)], rows[(index, depth - 1)]
                run: dict[str, Any] = {
                    "kind": "run",
                    "firstId": first.entry_id,
                    "lastId": last.entry_id,
                    "parentId": first.parent_id,
                    "length": depth - previous - 1,
                    "depthFrom": first.depth,
                    "segment": index,
                }
                if last.depth <= path_high:
                    run["onPath"] = True
                out.append(run)
            row = rows[(index, depth)]
            node: dict[str, Any] = {
                "kind": "node",
                "id": row.entry_id,
                "parentId": row.parent_id,
                "type": row.type,
                "depth": depth,
                "segment": index,
            }
            if row.role:
                node["role"] = row.role
            branches = children_at.get((index, depth), [])
            if branches:
                node["children"] = len(branches) + (1 if depth < s.tip_depth else 0)
            if depth == s.tip_depth:
                node["treeLeaf"] = True
            if depth <= path_high:
                node["onPath"] = True
            if leaf is not None and row.seq == leaf.seq:
                node["current"] = True
            if row.entry_id in labels:
                node["label"] = labels[row.entry_id]
            if row.entry_id in edits:
                node[edits[row.entry_id]] = True
            out.append(node)
            previous = depth
        return out

    # Depth-first drawing order without recursion. At a branch point the children come oldest first,
    # as Pi's tree lists them: the run that continues the segment takes its place among the branches.
    order = _child_order(session, segs, children_at)
    items: list[dict[str, Any]] = []
    roots = sorted(i for i, s in segs.items() if s.parent is None or s.parent not in segs)
    stack: list[tuple[int, list[dict[str, Any]], int]] = [(r, pieces(r), 0) for r in reversed(roots)]
    while stack:
        index, parts, at = stack.pop()
        if at >= len(parts):
            continue
        part = parts[at]
        items.append(part)
        if part["kind"] != "node" or (index, part["depth"]) not in order:
            stack.append((index, parts, at + 1))
            continue
        frames = [
            (index, parts, at + 1) if child is None else (child, pieces(child), 0)
            for child in order[(index, part["depth"])]
        ]
        stack.extend(reversed(frames))
    return {
        "leafId": session.leaf_entry_id,
        "entryCount": session.entry_count,
        "segmentCount": len(segs),
        "items": items,
    }


@dataclass(frozen=True, slots=True)
class TreeOrder:
    """Where each tree entry comes in the tree's drawing order, from the segment table alone.

    A segment is drawn in pieces split at its branch points: the piece up to a branch point, then each
    child's subtree and the piece continuing the segment, in the branch point's child order. Entries
    sort by (rank of their piece, depth).
    """

    starts: dict[int, list[int]]  # segment → start depths of its pieces, ascending
    ranks: dict[int, list[int]]  # segment → drawing rank of each of those pieces

    def pieces(self) -> list[tuple[int, int, int, int]]:
        """Return every piece as (segment, first depth, last depth, rank); a segment's last piece runs on
        to its tip, so its last depth is open."""
        out = []
        for segment, starts in self.starts.items():
            ranks = self.ranks[segment]
            for i, low in enumerate(starts):
                high = starts[i + 1] - 1 if i + 1 < len(starts) else 2**31 - 1
                out.append((segment, low, high, ranks[i]))
        return out

    def key(self, segment: int, depth: int) -> tuple[int, int] | None:
        """Return the sort key of the entry at (segment, depth), or None when it is not in the tree."""
        starts = self.starts.get(segment)
        if not starts:
            return None
        at = bisect_right(starts, depth) - 1
        return (self.ranks[segment][at], depth) if at >= 0 else None


def tree_order(session: ChatSession, *, by_time: bool = True) -> TreeOrder:
    """Return the drawing order of the session's tree: the overview's (children by time, as Pi lists
    them) or, with ``by_time=False``, the listing a restricted grant sees (children in append order)."""
    segs, children_at = _segments(session)
    order = _child_order(session, segs, children_at, by_time=by_time)
    branches: dict[int, list[int]] = {}
    for index, depth in order:
        branches.setdefault(index, []).append(depth)
    for depths in branches.values():
        depths.sort()
    starts: dict[int, list[int]] = {}
    ranks: dict[int, list[int]] = {}
    rank = 0
    roots = sorted(i for i, s in segs.items() if s.parent is None or s.parent not in segs)
    # Depth-first without recursion, as the overview draws: trees may be far deeper than the stack.
    stack = [(root, segs[root].start) for root in reversed(roots)]
    while stack:
        index, low = stack.pop()
        starts.setdefault(index, []).append(low)
        ranks.setdefault(index, []).append(rank)
        rank += 1
        points = branches.get(index, [])
        at = bisect_right(points, low - 1)
        if at == len(points):
            continue
        point = points[at]
        frames = [
            (index, point + 1) if child is None else (child, segs[child].start)
            for child in order[(index, point)]
        ]
        stack.extend(reversed(frames))
    # A segment's pieces are drawn top to bottom, so their starts were recorded in ascending order.
    return TreeOrder(starts, ranks)


def _segments(session: ChatSession) -> tuple[dict[int, _Seg], dict[tuple[int, int], list[int]]]:
    segs = {
        s[0]: _Seg(s[0], s[1], s[2], s[3])
        for s in Segment.objects.filter(session=session).values_list(
            "index", "parent_index", "start_depth", "tip_depth"
        )
    }
    children_at: dict[tuple[int, int], list[int]] = {}
    for index in sorted(segs):
        s = segs[index]
        if s.parent is not None and s.parent in segs:
            children_at.setdefault((s.parent, s.start - 1), []).append(index)
    return segs, children_at


def _child_order(
    session: ChatSession,
    segs: dict[int, _Seg],
    children_at: dict[tuple[int, int], list[int]],
    *,
    by_time: bool = True,
) -> dict[tuple[int, int], list[int | None]]:
    """Return each branch point's children oldest first (None: the run continuing its own segment).

    Children start in append order and are stably sorted by time, unreadable times comparing equal
    (``by_time=False``: append order alone).
    """
    wanted: list[tuple[int, int]] = []
    for (index, depth), branches in children_at.items():
        if depth < segs[index].tip_depth:
            wanted.append((index, depth + 1))
        wanted.extend((child, segs[child].start) for child in branches)
    found = _values_at(session, wanted, _ORDER_FIELDS)
    # Only ISO strings are stored as text; a null or numeric time is read from the line itself.
    others = [seq for _, _, seq, stamp in found if not stamp] if by_time else []
    times: dict[int, float] = {}
    if others:
        for seq, raw in Entry.objects.filter(session=session, seq__in=others).values_list("seq", "raw"):
            payload = parse_json(raw)
            times[seq] = js_date_ms(
                payload.get("timestamp", UNDEFINED) if isinstance(payload, dict) else UNDEFINED
            )
    firsts = {
        (seg, depth): (seq, 0.0 if not by_time else times[seq] if seq in times else js_date_ms(stamp))
        for seg, depth, seq, stamp in found
    }
    order: dict[tuple[int, int], list[int | None]] = {}
    for (index, depth), branches in children_at.items():
        options: list[tuple[int | None, tuple[int, float]]] = []
        if (index, depth + 1) in firsts:
            options.append((None, firsts[(index, depth + 1)]))
        options += [
            (child, firsts[(child, segs[child].start)])
            for child in branches
            if (child, segs[child].start) in firsts
        ]
        options.sort(key=lambda option: option[1][0])
        if by_time:
            options = js_sort(options, lambda a, b: _by_time(a[1][1], b[1][1]))
        order[(index, depth)] = [child for child, _ in options]
    return order


def _by_time(a: float, b: float) -> int:
    diff = a - b
    if diff != diff or diff == 0:
        return 0
    return -1 if diff < 0 else 1


def _rows(query: Any) -> list[_Row]:
    return [_Row(*values) for values in query.values_list(*_FIELDS)]


def _rows_at(session: ChatSession, positions: list[tuple[int, int]]) -> list[_Row]:
    """Return the entries at the given (segment, depth) positions, in one indexed query where possible."""
    return [_Row(*values) for values in _values_at(session, positions, _FIELDS)]


def _values_at(
    session: ChatSession, positions: list[tuple[int, int]], fields: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """Return ``fields`` of the entries at (segment, depth) positions, in one indexed query where possible."""
    # An OR of positions took seconds on a 100k session on SQLite: building it in the ORM, and a planner
    # that scanned.
    columns = ", ".join("e." + connection.ops.quote_name(f) for f in fields)
    on = "e.segment = r.seg AND e.depth = r.d"
    return join_entries(session, positions, "seg, d", on=on, select=columns)


def _labels_and_edits(session: ChatSession) -> tuple[dict[str, str], dict[str, str]]:
    """Return the resolved label per target and, per context-edited target, "omitted" or "edited"."""
    labels: dict[str, str] = {}
    edits: dict[str, str] = {}
    query = Entry.objects.filter(session=session, type__in=("label", "context_edit"))
    # Labels and edits are few: sorted here rather than by an ORDER BY that SQLite's planner (whose
    # statistics count every type alike) answered by walking the whole session in seq order.
    for _, kind, raw in sorted(query.values_list("seq", "type", "raw")):
        payload = parse_json(raw)
        if not isinstance(payload, dict) or not isinstance(payload.get("targetId"), str):
            continue
        target = payload["targetId"]
        if kind == "label":
            label = payload.get("label")
            if isinstance(label, str) and label:
                labels[target] = label
            else:
                labels.pop(target, None)
        else:
            edits[target] = "omitted" if payload.get("replacement") is None else "edited"
    return labels, edits
