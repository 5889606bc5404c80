"""Storage steps shared by the use cases: the session row, entries by COPY or insert, folded path facts.

These run inside the calling use case's transaction and never check access; callers hold the session
lock where they append.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from django.db import connection, transaction

from .. import realtime, signals
from ..domain.entries import Entry as DomainEntry
from ..domain.jsjson import js_stringify
from ..domain.search import search_text
from ..domain.storable import NOT_STORABLE, storable_text
from ..domain.tree import SessionTree, js_trim
from ..models import ChatSession, Entry, Segment
from .errors import InvalidSessionFile

__all__ = [
    "ANCHORS",
    "COLUMNS",
    "anchor_of",
    "append_rows",
    "check_storable",
    "check_storable_entry",
    "create_session_row",
    "insert_all",
]

COLUMNS = (
    "session_id",
    "seq",
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "raw",
    "parent_seq",
    "depth",
    "segment",
    "compaction_seq",
    "model_seq",
    "thinking_seq",
    "search_text",
)


def create_session_row(
    *, owner: Any, header: dict[str, Any], header_raw: str = "", filename: str
) -> ChatSession:
    """Create the session row for a Pi header (written as Pi writes it unless the verbatim line is given)."""
    version = header.get("version")

    def text(key: str) -> str | None:
        value = header.get(key)
        return value if isinstance(value, str) else None

    return ChatSession.objects.create(
        owner=owner,
        pi_id=header["id"],
        header_raw=header_raw or js_stringify(header),
        version=version if isinstance(version, int) and not isinstance(version, bool) else 3,
        cwd=text("cwd") or "",
        pi_timestamp=text("timestamp") or "",
        parent_session=text("parentSession"),
        source_filename=filename,
    )


# -- what PostgreSQL text can hold ----------------------------------------------------------------------


def check_storable(values: Iterable[Any], where: str) -> None:
    """Refuse strings PostgreSQL text cannot hold (``domain.storable``): every write path's one message."""
    for value in values:
        if isinstance(value, str) and not storable_text(value):
            raise InvalidSessionFile(f"{where}: a string {NOT_STORABLE}")


def check_storable_entry(entry: DomainEntry, stamp: Any, seq: int) -> None:
    name = entry.get("name") if entry.type == "session_info" else None
    check_storable((entry.id, entry.parent_id, entry.type, role(entry), stamp, name), f"entry {seq + 1}")


def role(entry: DomainEntry) -> str:
    value = entry.role
    return value if isinstance(value, str) else ""


def timestamp(entry: DomainEntry) -> str:
    stamp = entry.timestamp
    return stamp if isinstance(stamp, str) else ""


# -- a whole session at once ----------------------------------------------------------------------------


def insert_all(
    session: ChatSession, entries: Sequence[DomainEntry], lines: Iterable[tuple[str, Any, str]]
) -> None:
    """Insert every entry of a new session with its folded path facts, by COPY where available.

    ``lines`` gives each entry's verbatim text, timestamp and search text, in order; it is consumed once.
    """
    tree = SessionTree(entries)
    facts, segments = tree.path_facts()
    tip: dict[int, tuple[int, int]] = {}
    first: dict[int, int] = {}
    for seq, fact in enumerate(facts):
        if fact is not None:
            tip[fact.segment] = (seq, fact.depth)
            first.setdefault(fact.segment, seq)

    def rows() -> Iterator[tuple[Any, ...]]:
        for seq, (entry, (raw, stamp, text)) in enumerate(zip(entries, lines, strict=True)):
            check_storable_entry(entry, stamp, seq)
            fact = facts[seq]
            parent = tree.parent[seq]
            yield (
                session.pk,
                seq,
                entry.id,
                entry.parent_id,
                entry.type or "",
                role(entry),
                stamp if isinstance(stamp, str) else "",
                raw,
                None if parent == -1 else parent,
                None if fact is None else fact.depth,
                None if fact is None else fact.segment,
                None if fact is None or fact.compaction < 0 else fact.compaction,
                None if fact is None or fact.model < 0 else fact.model,
                None if fact is None or fact.thinking < 0 else fact.thinking,
                text,
            )

    _copy_rows(rows())
    Segment.objects.bulk_create(
        [
            Segment(
                session=session,
                index=s.index,
                parent_index=s.parent_segment,
                start_depth=s.start_depth,
                first_seq=first[s.index],
                tip_seq=tip[s.index][0],
                tip_depth=tip[s.index][1],
            )
            for s in segments
        ],
        batch_size=2000,
    )
    leaf = tree.last_leaf_id()
    session.leaf_entry_id = leaf
    session.leaf_seq = tree.by_id[leaf] if leaf is not None else None
    session.next_seq = len(entries)
    session.next_segment = len(segments)
    session.entry_count = len(entries)
    session.message_count = sum(1 for e in entries if e.type == "message")
    session.name = tree.session_name() or ""
    session.save()
    if entries:
        signals.entries_stored.send(
            ChatSession, session=session, first_seq=0, last_seq=len(entries) - 1, rows=None
        )


def _copy_rows(rows: Iterable[tuple[Any, ...]]) -> None:
    table = Entry._meta.db_table
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            raw_cursor = cursor.cursor
            with raw_cursor.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    placeholders = ", ".join(["%s"] * len(COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({placeholders})", list(rows))


# -- entries after the last one -------------------------------------------------------------------------


def append_rows(
    session: ChatSession, entries: Sequence[DomainEntry], raws: Sequence[str], *, move_leaf: bool
) -> list[Entry]:
    """Insert entries after the last one, folding path facts from each parent row. Caller holds the lock."""
    by_id = _parent_rows(session, entries)
    segments = {
        s.index: s
        for s in Segment.objects.filter(
            session=session, index__in={r.segment for r in by_id.values() if r.segment is not None}
        )
    }
    new_rows: list[Entry] = []
    seq = session.next_seq
    for entry, raw in zip(entries, raws, strict=True):
        # The same check as an import's, so append, sync, labels and renames refuse the same values.
        check_storable_entry(entry, entry.timestamp, seq)
        row = Entry(
            session=session,
            seq=seq,
            entry_id=entry.id,
            parent_id=entry.parent_id,
            type=entry.type or "",
            role=role(entry),
            timestamp=timestamp(entry),
            raw=raw,
            search_text=search_text(entry.payload),
        )
        if entry.id is not None:
            parent = by_id.get(entry.parent_id) if entry.parent_id is not None else None
            _place(session, row, parent, segments)
            _carry_anchor(row, entry)
            by_id[entry.id] = row
        new_rows.append(row)
        seq += 1
    Entry.objects.bulk_create(new_rows)
    for segment in segments.values():
        segment.save()
    _count(session, entries, new_rows, move_leaf=move_leaf)
    transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=seq - 1))
    if new_rows:
        signals.entries_stored.send(
            ChatSession, session=session, first_seq=new_rows[0].seq, last_seq=new_rows[-1].seq, rows=new_rows
        )
    return new_rows


def _parent_rows(session: ChatSession, entries: Sequence[DomainEntry]) -> dict[str, Entry]:
    by_id: dict[str, Entry] = {}
    parent_ids = {e.parent_id for e in entries if e.parent_id is not None}
    for row in Entry.objects.filter(session=session, entry_id__in=parent_ids).order_by("seq"):
        by_id[row.entry_id or ""] = row  # the latest duplicate wins
    return by_id


def _place(session: ChatSession, row: Entry, parent: Entry | None, segments: dict[int, Segment]) -> None:
    """Give the row its depth and segment: a new root, the next step of its parent's segment, or a branch."""
    if parent is None or parent.depth is None:
        row.depth = 0
        segment = Segment(
            session=session,
            index=session.next_segment,
            parent_index=None,
            start_depth=0,
            first_seq=row.seq,
            tip_seq=row.seq,
            tip_depth=0,
        )
        session.next_segment += 1
    else:
        row.parent_seq = parent.seq
        row.depth = parent.depth + 1
        row.compaction_seq, row.model_seq, row.thinking_seq = (
            parent.compaction_seq,
            parent.model_seq,
            parent.thinking_seq,
        )
        current = segments.get(parent.segment)  # type: ignore[arg-type]
        if current is not None and current.tip_seq == parent.seq:
            segment = current
            segment.tip_seq, segment.tip_depth = row.seq, row.depth
        else:
            segment = Segment(
                session=session,
                index=session.next_segment,
                parent_index=parent.segment,
                start_depth=row.depth,
                first_seq=row.seq,
                tip_seq=row.seq,
                tip_depth=row.depth,
            )
            session.next_segment += 1
    row.segment = segment.index
    segments[segment.index] = segment


# The projection anchors an entry row carries: the seq of the nearest compaction, model change (or
# assistant answer, which names its model) and thinking-level change on its path, itself included.
ANCHORS = ("compaction_seq", "model_seq", "thinking_seq")


def anchor_of(entry: DomainEntry) -> str | None:
    """Return which projection anchor the entry itself is, if any."""
    if entry.type == "compaction":
        return "compaction_seq"
    if entry.type == "model_change" or (entry.type == "message" and entry.role == "assistant"):
        return "model_seq"
    if entry.type == "thinking_level_change":
        return "thinking_seq"
    return None


def _carry_anchor(row: Entry, entry: DomainEntry) -> None:
    """Point the row's projection anchors at itself when it is a compaction, model or thinking change."""
    kind = anchor_of(entry)
    if kind is not None:
        setattr(row, kind, row.seq)


def _count(
    session: ChatSession, entries: Sequence[DomainEntry], rows: list[Entry], *, move_leaf: bool
) -> None:
    session.next_seq += len(rows)
    session.entry_count += len(rows)
    session.message_count += sum(1 for e in entries if e.type == "message")
    for entry in entries:
        if entry.type == "session_info":
            name = entry.get("name")
            session.name = (js_trim(name) if isinstance(name, str) else "") or ""
    last = next((r for r in reversed(rows) if r.entry_id is not None), None)
    if move_leaf and last is not None:
        session.leaf_entry_id, session.leaf_seq = last.entry_id, last.seq
    session.save()
