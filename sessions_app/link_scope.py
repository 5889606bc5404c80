"""The scope rule of every grant, for every channel: REST reads, live events, and copies.

A grant is one of: a member (the owner or a team role: everything), a live tree link (every entry, but
not what collaborators alone see: run prompts, streamed deltas, compaction and summary runs), a path
link (root → the entry pinned when it was made) or a frozen link (what existed at the freeze). Path and
frozen links see a fixed part of the session, so nothing that happens later is theirs to hear about.

Unrestricted viewers skip the entry filtering below; the normal read paths serve them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db.models import QuerySet

from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from pitree.tree import SessionTree, js_trim
from pitree.work_query import parse_work_query
from sessions_app import text_search, work_search
from sessions_app.access import Access
from sessions_app.models import ChatSession, Entry, Segment, ShareLink
from sessions_app.queries import path_seqs

__all__ = [
    "ACCESS_EVENTS",
    "Grant",
    "grant_of",
    "live_event",
    "require_visible",
    "scoped_entries",
    "scoped_entries_since",
    "scoped_export",
    "scoped_hits",
    "scoped_tree",
    "session_as_seen",
    "visible_last_seq",
    "visible_rows",
    "visible_tree",
]


class Grant(StrEnum):
    """How a viewer holds a session; decides what reaches them on every channel."""

    MEMBER = "member"  # the owner or a team role
    TREE_LINK = "tree_link"
    PATH_LINK = "path_link"
    FROZEN_LINK = "frozen_link"


# Events that change who may read: never forwarded, every socket of the session re-checks its access.
ACCESS_EVENTS = frozenset({"access_changed", "link_revoked"})
# Events a live tree link receives as they are, limited to these fields: positions, never content.
_POSITION_FIELDS = {
    "entries_appended": ("event", "session", "seq"),
    "leaf_moved": ("event", "session", "leaf", "seq"),
    # A comment changed on an entry (discussion): which thread, never its text; the page reads it over HTTP.
    "comment": ("event", "session", "entryId", "threadId", "commentId", "change"),
}


def grant_of(access: Access) -> Grant:
    """Return the kind of grant behind an access."""
    if access.link is None:
        return Grant.MEMBER
    if access.link.frozen_seq is not None:
        return Grant.FROZEN_LINK
    if access.link.scope == ShareLink.Scope.PATH:
        return Grant.PATH_LINK
    return Grant.TREE_LINK


def live_event(grant: Grant, message: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return what a socket with this grant receives for a group event, or None for nothing.

    Members get every event. A live tree link gets position events, and for anything else (whose
    content REST shows to collaborators only) at most a bare ``changed`` hint with the sequence number.
    Path and frozen links see a part fixed at their creation: only the session's deletion reaches them.
    """
    body = {k: v for k, v in message.items() if k != "type"}
    name = body.get("event")
    if name in ACCESS_EVENTS:
        return None
    if grant is Grant.MEMBER:
        return body
    if name == "session_deleted":
        return {"event": name, "session": body.get("session")}
    if grant is not Grant.TREE_LINK:
        return None
    fields = _POSITION_FIELDS.get(str(name))
    if fields is not None:
        return {k: body.get(k) for k in fields}
    seq = body.get("seq")
    if isinstance(seq, int) and not isinstance(seq, bool):
        return {"event": "changed", "session": body.get("session"), "seq": seq}
    return None


def visible_last_seq(access: Access) -> int | None:
    """Return the last append sequence inside this viewer's scope (what a caught-up client holds)."""
    last = access.last_seq()
    if access.link is None or access.link.scope != ShareLink.Scope.PATH or last is None:
        return last
    return scoped_entries(access).order_by("-seq").values_list("seq", flat=True).first()


def scoped_entries(access: Access) -> QuerySet[Entry]:
    """Return the session's entries this viewer may see, in append order."""
    query = Entry.objects.filter(session=access.session).order_by("seq")
    limit = access.max_seq()
    if limit is not None:
        query = query.filter(seq__lte=limit)
    path = _path_of_link(access)
    if path is not None:
        query = query.filter(seq__in=path)
    return query


def visible_rows(access: Access, rows: Sequence[Entry]) -> list[Entry]:
    """Return the rows this viewer may see, in their order."""
    if not rows:
        return []
    seen = set(scoped_entries(access).filter(seq__in=[r.seq for r in rows]).values_list("seq", flat=True))
    return [r for r in rows if r.seq in seen]


def _path_of_link(access: Access) -> list[int] | None:
    """Return the seqs a path link sees (root → its entry; none when that entry is gone), or None for a
    grant that is not limited to a path."""
    if access.link is None or access.link.scope != ShareLink.Scope.PATH:
        return None
    leaf_id = access.path_leaf()
    leaf = (
        Entry.objects.filter(session=access.session, entry_id=leaf_id).order_by("-seq").first()
        if leaf_id is not None
        else None
    )
    return path_seqs(access.session, leaf) if leaf is not None else []


def scoped_hits(access: Access, text: str) -> text_search.HitList:
    """Return the session's search hits this viewer may see, in the order of the tree it is shown.

    The same scope as ``scoped_entries``: nothing after a frozen link's seq, nothing off a path link's
    path. Restricted grants see the append-ordered listing of ``scoped_tree``, so their hits follow it.
    ``path:``, ``tool:`` and ``cmd:`` terms find the tool uses that match (``work_search``).
    """
    work = parse_work_query(text)
    by_time = not access.restricted
    if work.has_work:
        found = text_search.HitList(work_search.session_hits(access.session, work, by_time=by_time))
    else:
        found = text_search.session_hits(access.session, text, by_time=by_time)
    seqs = found.seqs
    limit = access.max_seq()
    if limit is not None:
        seqs = [seq for seq in seqs if seq <= limit]
    path = _path_of_link(access)
    if path is not None:
        on_path = set(path)
        seqs = [seq for seq in seqs if seq in on_path]
    return text_search.HitList(seqs, found.incomplete)


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


def session_as_seen(access: Access) -> ChatSession:
    """Return the session as this viewer sees it: for a restricted grant (a frozen or path link), an
    unsaved copy whose name, counters, leaf, last sequence and last activity come only from the entries
    in its scope (what existed at the freeze, what lies on the path); for everyone else, the session."""
    session = access.session
    if not access.restricted:
        return session
    seen = copy.copy(session)
    visible = scoped_entries(access)
    seen.entry_count = visible.count()
    seen.message_count = visible.filter(type="message").count()
    seen.files_changed = None  # counted over every branch: not this scope's to tell
    info = visible.filter(type="session_info").order_by("-seq").values_list("raw", flat=True).first()
    name = parse_json(info).get("name") if info is not None else None
    seen.name = (js_trim(name) if isinstance(name, str) else "") or ""
    last = visible.order_by("-seq").values_list("seq", "timestamp").first()
    seen.next_seq = last[0] + 1 if last is not None else 0
    leaf_id = access.leaf_id()
    seen.leaf_entry_id = leaf_id
    seen.leaf_seq = (
        visible.filter(entry_id=leaf_id).order_by("-seq").values_list("seq", flat=True).first()
        if leaf_id is not None
        else None
    )
    frozen_at = access.link.created_at if access.link is not None else session.updated_at
    try:
        stamp = datetime.fromisoformat(last[1]) if last is not None and last[1] else None
    except ValueError:
        stamp = None
    seen.updated_at = min(stamp, frozen_at) if stamp is not None and stamp.tzinfo is not None else frozen_at
    return seen


def visible_tree(access: Access) -> SessionTree:
    """Return a tree index of only the entries this viewer may see, for copies (fork, clone) made through
    a restricted grant: labels whose label entry lies outside the scope or after the freeze stay behind."""
    rows = scoped_entries(access).values_list("seq", "raw")
    return SessionTree(
        [entry_from_value(seq, parse_json(raw)) for seq, raw in rows.iterator(chunk_size=5000)]
    )
