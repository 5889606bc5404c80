"""Appends under the leaf with few round trips while the session row is locked (PostgreSQL).

Concurrent writers of one session queue on its row lock, so what happens under the lock sets the p99. The
general path reads the locked row, checks ids, reads the parent row and its segment, inserts, then saves
the segment and the session: eight round trips. Here one ``UPDATE … RETURNING`` takes the lock, claims the
seqs and moves the leaf and counters; one read gets the parent's path facts and any id already taken;
one insert stores the entries; one write extends (or opens) the segment. Entries are validated and given
ids before the lock is taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from .. import realtime, signals
from ..domain.entries import entry_from_value
from ..domain.jsjson import js_stringify
from ..domain.jsonl import generate_entry_id
from ..domain.search import search_text
from ..domain.timestamps import now_iso
from ..domain.tree import js_trim
from ..models import ChatSession, Entry, Segment
from .errors import AppendConflict, InvalidEntries
from .rows import _carry_anchor, _place, role, timestamp

__all__ = ["append_under_leaf", "eligible"]

_CLAIM = """
UPDATE sessions_app_chatsession AS s SET
    next_seq = s.next_seq + %(n)s,
    entry_count = s.entry_count + %(n)s,
    message_count = s.message_count + %(messages)s,
    leaf_entry_id = %(leaf)s,
    leaf_seq = s.next_seq + %(n)s - 1,
    name = COALESCE(%(name)s, s.name),
    updated_at = %(now)s
FROM (SELECT id, next_seq, leaf_seq, leaf_entry_id FROM sessions_app_chatsession WHERE id = %(pk)s FOR UPDATE)
    AS old
WHERE s.id = old.id AND (%(any_leaf)s OR old.leaf_entry_id IS NOT DISTINCT FROM %(expected)s)
RETURNING old.next_seq, old.leaf_seq, old.leaf_entry_id, s.next_segment, s.entry_count, s.message_count,
    s.name, s.updated_at
"""
# A new statement, so a new snapshot: it sees the parent row the writer before us just committed.
_FACTS = """
SELECT p.depth, p.segment, p.compaction_seq, p.model_seq, p.thinking_seq, g.tip_seq, g.tip_depth,
    ARRAY(
        SELECT e.entry_id FROM sessions_app_entry e WHERE e.session_id = %(pk)s AND e.entry_id = ANY(%(ids)s)
    )
FROM (SELECT 1) AS one
LEFT JOIN sessions_app_entry p ON p.session_id = %(pk)s AND p.seq = %(leaf_seq)s
LEFT JOIN sessions_app_segment g ON g.session_id = %(pk)s AND g."index" = p.segment
"""


def eligible(entries: Sequence[Any]) -> bool:
    """Return whether a batch can take this path: objects that all hang under the leaf, on PostgreSQL."""
    return connection.vendor == "postgresql" and all(
        isinstance(e, dict) and "parentId" not in e for e in entries
    )


def append_under_leaf(
    session: ChatSession, entries: Sequence[dict[str, Any]], expected_leaf: object
) -> list[Entry]:
    """Append a chain of entries under the leaf. The caller checked access; this opens the transaction."""
    prepared = _prepare(entries)
    explicit = {i for i, e in enumerate(entries) if e.get("id") is not None}
    for _ in range(8):
        try:
            return _attempt(session, prepared, explicit, expected_leaf)
        except _Redraw as redraw:
            # A generated id met a stored one (rare): the claim was undone; draw those ids again.
            taken = set(redraw.args[0])
            avoid = taken | {p["id"] for p in prepared}
            for i, p in enumerate(prepared):
                if i not in explicit and p["id"] in taken:
                    p["id"] = generate_entry_id(avoid)
                    avoid.add(p["id"])
    raise InvalidEntries("could not draw fresh entry ids")


class _Redraw(Exception):
    pass


def _attempt(
    session: ChatSession, prepared: list[dict[str, Any]], explicit: set[int], expected_leaf: object
) -> list[Entry]:
    ids = [p["id"] for p in prepared]
    name: str | None = None
    for p in prepared:
        if p["type"] == "session_info":
            name = (js_trim(p["name"]) if isinstance(p.get("name"), str) else "") or ""
    params = {
        "pk": session.pk,
        "n": len(prepared),
        "messages": sum(1 for p in prepared if p["type"] == "message"),
        "leaf": ids[-1],
        "name": name,
        "now": timezone.now(),
        "any_leaf": expected_leaf is ...,
        "expected": expected_leaf if isinstance(expected_leaf, str) else None,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_CLAIM, params)
        claimed = cursor.fetchone()
        if claimed is None:
            current = ChatSession.objects.filter(pk=session.pk).values_list("leaf_entry_id", flat=True)
            if not current.exists():
                raise ChatSession.DoesNotExist(f"session {session.pk} is gone")
            raise AppendConflict(params["expected"], current.first())
        first_seq, leaf_seq, leaf_id, *counters = claimed
        cursor.execute(_FACTS, {"pk": session.pk, "ids": ids, "leaf_seq": leaf_seq})
        depth, segment, compaction, model, thinking, tip_seq, tip_depth, taken = cursor.fetchone()
        if taken:
            clash = [i for i, p in enumerate(prepared) if p["id"] in set(taken)]
            if any(i in explicit for i in clash):
                first = prepared[next(i for i in clash if i in explicit)]["id"]
                raise InvalidEntries(f"id {first!r} already exists in this session")
            raise _Redraw(taken)
        parent = None
        if leaf_id is not None and depth is not None:
            parent = Entry(seq=leaf_seq, entry_id=leaf_id, depth=depth, segment=segment)
            parent.compaction_seq, parent.model_seq, parent.thinking_seq = compaction, model, thinking
        rows = _store(session, prepared, first_seq, leaf_id, parent, counters[0], tip_seq, tip_depth)
    # _store moved next_segment past any segment it opened; the rest comes back from the claim.
    session.entry_count, session.message_count, session.name, session.updated_at = counters[1:]
    session.leaf_entry_id, session.leaf_seq, session.next_seq = ids[-1], rows[-1].seq, rows[-1].seq + 1
    return rows


def _store(
    session: ChatSession,
    prepared: list[dict[str, Any]],
    first_seq: int,
    leaf_id: str | None,
    parent: Entry | None,
    next_segment: int,
    tip_seq: int | None,
    tip_depth: int | None,
) -> list[Entry]:
    """Insert the rows with their path facts and extend or open their segment. Runs under the lock."""
    segments: dict[int, Segment] = {}
    if parent is not None and parent.segment is not None and tip_seq is not None:
        segments[parent.segment] = Segment(session=session, index=parent.segment, tip_seq=tip_seq)
    session.next_segment = next_segment
    rows: list[Entry] = []
    above = parent
    for offset, p in enumerate(prepared):
        p["parentId"] = leaf_id if offset == 0 else prepared[offset - 1]["id"]
        raw = js_stringify(p)
        entry = entry_from_value(0, p)
        row = Entry(
            session=session,
            seq=first_seq + offset,
            entry_id=entry.id,
            parent_id=entry.parent_id,
            type=entry.type or "",
            role=role(entry),
            timestamp=timestamp(entry),
            raw=raw,
            search_text=search_text(p),
        )
        _place(session, row, above, segments)
        _carry_anchor(row, entry)
        rows.append(row)
        above = row
    Entry.objects.bulk_create(rows)
    existing = parent.segment if parent is not None else None
    fresh = [s for index, s in segments.items() if index != existing]
    if existing in segments and segments[existing].tip_seq != tip_seq:
        Segment.objects.filter(session=session, index=existing).update(
            tip_seq=segments[existing].tip_seq, tip_depth=segments[existing].tip_depth
        )
    if fresh:
        Segment.objects.bulk_create(fresh)
        ChatSession.objects.filter(pk=session.pk).update(next_segment=F("next_segment") + len(fresh))
    last_seq = rows[-1].seq
    transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=last_seq))
    signals.entries_stored.send(
        ChatSession, session=session, first_seq=first_seq, last_seq=last_seq, rows=rows
    )
    return rows


def _prepare(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate and fill in id, parentId (filled under the lock) and timestamp in Pi's key order."""
    out: list[dict[str, Any]] = []
    batch: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"entry {index}"
        kind = entry.get("type")
        if not isinstance(kind, str) or not kind or kind == "session":
            raise InvalidEntries(f"{where}: 'type' must be a non-empty string other than 'session'")
        entry_id = entry.get("id")
        if entry_id is None:
            entry_id = generate_entry_id(batch)
        elif not isinstance(entry_id, str) or not entry_id:
            raise InvalidEntries(f"{where}: 'id' must be a non-empty string")
        elif entry_id in batch:
            raise InvalidEntries(f"{where}: id {entry_id!r} already exists in this session")
        stamp = entry.get("timestamp")
        if stamp is None:
            stamp = now_iso()
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        out.append({"type": kind, "id": entry_id, "parentId": None, "timestamp": stamp, **rest})
        batch.add(entry_id)
    return out
