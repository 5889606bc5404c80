"""Reads limited to what a share link shows: entries up to a frozen point, or one path root → entry.

Unrestricted viewers never come here; the normal read paths serve them without the extra filtering.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from .access import Access
from .domain.jsjson import parse_json
from .models import Entry, Segment, ShareLink
from .queries import path_seqs

__all__ = ["require_visible", "scoped_entries", "scoped_entries_since", "scoped_export", "scoped_tree"]


def scoped_entries(access: Access) -> QuerySet[Entry]:
    """Return the session's entries this viewer may see, in append order."""
    query = Entry.objects.filter(session=access.session).order_by("seq")
    limit = access.max_seq()
    if limit is not None:
        query = query.filter(seq__lte=limit)
    if access.link is not None and access.link.scope == ShareLink.Scope.PATH:
        leaf_id = access.path_leaf()
        leaf = (
            Entry.objects.filter(session=access.session, entry_id=leaf_id).order_by("-seq").first()
            if leaf_id is not None
            else None
        )
        if leaf is None:
            return query.none()
        query = query.filter(seq__in=path_seqs(access.session, leaf))
    return query


def scoped_entries_since(access: Access, since: str | None, *, limit: int) -> list[Entry]:
    """Return visible entries strictly after the visible entry ``since``, in append order."""
    query = scoped_entries(access)
    if since is not None:
        first = access.entry(since)
        query = query.filter(seq__gt=first.seq)
    return list(query[:limit])


def scoped_export(access: Access) -> Iterable[bytes]:
    """Yield a session file holding the header and only the visible entries."""
    yield (access.session.header_raw + "\n").encode("utf-8", errors="surrogatepass")
    for raw in scoped_entries(access).values_list("raw", flat=True).iterator(chunk_size=2000):
        yield (raw + "\n").encode("utf-8", errors="surrogatepass")


def scoped_tree(access: Access) -> dict[str, Any]:
    """Return a tree overview of the visible entries: every node listed, depth first, nothing folded."""
    session = access.session
    fields = ("seq", "entry_id", "parent_id", "type", "role", "timestamp", "depth", "segment")
    rows = [dict(zip(fields, r, strict=True)) for r in scoped_entries(access).values_list(*fields)]
    rows = [r for r in rows if r["entry_id"] is not None]
    seen = {r["entry_id"] for r in rows}
    columns: dict[int, int] = {}
    for index, parent in (
        Segment.objects.filter(session=session).order_by("index").values_list("index", "parent_index")
    ):
        columns[index] = columns.get(parent, -1) + 1 if parent is not None else 0
    labels: dict[str, str] = {}
    for raw in (r.raw for r in scoped_entries(access).filter(type="label")):
        payload = parse_json(raw)
        if isinstance(payload, dict) and isinstance(payload.get("targetId"), str):
            label = payload.get("label")
            if isinstance(label, str) and label:
                labels[payload["targetId"]] = label
            else:
                labels.pop(payload["targetId"], None)
    children: dict[str | None, list[dict[str, Any]]] = {}
    for row in rows:
        parent = row["parent_id"] if row["parent_id"] in seen else None
        children.setdefault(parent, []).append(row)
    leaf_id = access.leaf_id()
    on_path: set[str] = set()
    by_id = {r["entry_id"]: r for r in rows}
    cursor = by_id.get(leaf_id) if leaf_id else None
    while cursor is not None and cursor["entry_id"] not in on_path:
        on_path.add(cursor["entry_id"])
        cursor = by_id.get(cursor["parent_id"]) if cursor["parent_id"] else None
    items: list[dict[str, Any]] = []
    # Depth-first without recursion: trees may be far deeper than Python's stack.
    stack = list(reversed(children.get(None, [])))
    while stack:
        row = stack.pop()
        kids = children.get(row["entry_id"], [])
        node: dict[str, Any] = {
            "kind": "node",
            "id": row["entry_id"],
            "parentId": row["parent_id"],
            "type": row["type"],
            "depth": row["depth"],
            "segment": row["segment"],
            "column": columns.get(row["segment"], 0),
            "timestamp": row["timestamp"],
        }
        if row["role"]:
            node["role"] = row["role"]
        if len(kids) > 1:
            node["children"] = len(kids)
        if not kids:
            node["treeLeaf"] = True
        if row["entry_id"] in on_path:
            node["onPath"] = True
        if row["entry_id"] == leaf_id:
            node["current"] = True
        if row["entry_id"] in labels:
            node["label"] = labels[row["entry_id"]]
        items.append(node)
        stack.extend(reversed(kids))
    return {"leafId": leaf_id, "entryCount": len(rows), "segmentCount": len(columns), "items": items}


def require_visible(access: Access, entry_id: str | None) -> None:
    """Raise "not found" unless the entry is inside what this viewer may see."""
    if entry_id is not None:
        access.entry(entry_id)
