"""Where every entry row is written: one interface, two backends chosen once by database vendor.

Import, sync, the API's append, runs, labels, summaries, navigation with a summary, forks and clones
all store entries here. The rules are the domain's (``domain.placement``: what may be stored and where
it lands); a backend only reads what the rules need and writes what they decided, and enforces the
quotas (entries a session holds, bytes a user stores) in the same place for every entry point.

- ``PortableStore`` (every database; the embedded SQLite mode): takes the session row's lock, reads the
  parents' facts, asks ``place`` and writes the rows with the ORM.
- ``PostgresStore`` (``leaf_append``): a chain (what almost every append is) goes to the database in one
  pipelined round trip; whole files go in by COPY; everything else as the portable backend does it.

Every method runs inside the caller's transaction (or opens one) and checks no access: the use cases do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from functools import cache, partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Sum

from actionlog.facade import PendingAction
from core import realtime
from pitree import placement
from pitree.attribution import Author
from pitree.context_sums import OwnColumns, OwnSums, own_sums
from pitree.entries import Entry as DomainEntry
from pitree.entries import entry_from_value
from pitree.jsjson import js_stringify
from pitree.searchable import search_text
from pitree.storable import Unstorable
from pitree.tool_uses import says_anything, tool_facts
from pitree.tree import SessionTree
from sessions_app import file_steps, signals
from sessions_app.attribution import author_pk
from sessions_app.models import ChatSession, Entry, Segment
from sessions_app.services import context_sums, tool_index
from sessions_app.services.errors import AppendConflict, InvalidSessionFile, QuotaExceeded

__all__ = ["COLUMNS", "COUNTERS", "EntryStore", "PortableStore", "entry_store", "line_bytes"]

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
    "author_id",
)

# What an append changes on the session row, copied back to the caller's instance without a re-read.
COUNTERS = (
    "leaf_entry_id",
    "leaf_seq",
    "next_seq",
    "next_segment",
    "entry_count",
    "message_count",
    "name",
    "stored_bytes",
    "updated_at",
    "files_changed",
)


def line_bytes(raw: str) -> int:
    """Bytes a stored line counts toward the quota: its UTF-8 (a lone surrogate escaped as it came)."""
    return len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass"))


def role(entry: DomainEntry) -> str:
    value = entry.role
    return value if isinstance(value, str) else ""


def timestamp(entry: DomainEntry) -> str:
    stamp = entry.timestamp
    return stamp if isinstance(stamp, str) else ""


def check_line(entry: DomainEntry, where: str) -> None:
    """The domain's field check for a line kept verbatim (import, sync), as the file error it is."""
    try:
        placement.check_fields(entry.payload, where)
    except Unstorable as exc:
        raise InvalidSessionFile(str(exc)) from exc


def session_limit() -> int:
    return int(settings.PIWEB_MAX_IMPORT_ENTRIES)


def bytes_quota() -> int:
    return int(settings.PIWEB_MAX_STORED_BYTES_PER_USER)


def check_quotas(session: ChatSession, *, entries: int, size: int, replacing: int = 0) -> None:
    """Refuse (413, with the numbers) entries the session or its owner's stored-bytes quota cannot take.

    Quotas belong to the session's owner, whoever writes. ``replacing`` is what the session stores now
    when the write replaces it (an import of a file that holds the whole session).
    """
    limit = session_limit()
    if limit and session.entry_count + entries > limit:
        raise QuotaExceeded(
            f"The session holds {session.entry_count} entries; {entries} more would pass the limit of "
            f"{limit} entries a session holds."
        )
    quota = bytes_quota()
    if quota and size:
        stored = owner_bytes(session.owner_id) - replacing
        if stored + size > quota:
            raise QuotaExceeded(
                f"Storing these entries ({size} bytes) would bring your sessions to {stored + size} "
                f"bytes; the limit is {quota} bytes."
            )


def owner_bytes(owner_id: Any) -> int:
    """Bytes the owner's live sessions store (a deleted session no longer counts)."""
    total = ChatSession.objects.filter(owner_id=owner_id, deleted_at__isnull=True).aggregate(
        total=Sum("stored_bytes")
    )["total"]
    return int(total or 0)


class EntryStore:
    """The interface every write path stores entries through (see the module docstring)."""

    def append(
        self,
        session: ChatSession,
        entries: Sequence[Any],
        *,
        author: Author,
        expected_leaf: object = ...,
        quota: bool = True,
        log: PendingAction | None = None,
    ) -> list[Entry]:
        """Append entries offered by a client (ids and timestamps drawn when missing); the leaf moves.

        ``log`` is the append's action-log row, written in its transaction (None: the caller logs);
        ``author`` who wrote the entries (recorded beside each one).

        Opens the transaction (or joins the caller's) and holds the session row's lock until it ends.
        """
        raise NotImplementedError

    def append_lines(
        self,
        session: ChatSession,
        entries: Sequence[DomainEntry],
        raws: Sequence[str],
        *,
        where: Callable[[int], str],
        author: Author,
        move_leaf: bool = True,
        quota: bool = True,
    ) -> list[Entry]:
        """Append lines kept verbatim (sync, a re-import) after the last one. The caller holds the lock."""
        raise NotImplementedError

    def insert_all(
        self,
        session: ChatSession,
        entries: Sequence[DomainEntry],
        lines: Iterable[tuple[str, Any, str]],
        *,
        size: int,
        author: Author,
        copied_authors: Mapping[str, int | None] | None = None,
        replacing: int = 0,
        checked: bool = True,
        own: Sequence[OwnSums] | None = None,
        tools: tool_index.Spool | None = None,
    ) -> None:
        """Store every entry of a new session (an import, a fork): ``lines`` gives (line, timestamp,
        search text) per entry and is read once; ``size`` is the lines' bytes (for the quota).
        ``checked=False`` skips the field caps for entries measured before (copied from stored ones, or
        by an import's scan); ``copied_authors`` (entry id → author row) keeps the authors of copied
        entries, the rest are ``author``'s. ``own`` is each entry's share of the running sums when
        ``entries`` hold light payloads (an import's scan), ``tools`` what their lines say about tools,
        for the same reason: both are filled in as ``lines`` are read, and read once they are stored."""
        raise NotImplementedError


class PortableStore(EntryStore):
    """The ORM backend: any database Django supports."""

    # -- entries from a client -------------------------------------------------------------------------

    def append(
        self,
        session: ChatSession,
        entries: Sequence[Any],
        *,
        author: Author,
        expected_leaf: object = ...,
        quota: bool = True,
        log: PendingAction | None = None,
    ) -> list[Entry]:
        return self._append_prepared(
            session, _prepare(entries), author=author, expected_leaf=expected_leaf, quota=quota, log=log
        )

    def _append_prepared(
        self,
        session: ChatSession,
        prepared: placement.Prepared,
        *,
        author: Author,
        expected_leaf: object,
        quota: bool,
        log: PendingAction | None,
    ) -> list[Entry]:
        with transaction.atomic():
            locked = ChatSession.objects.select_for_update().get(pk=session.pk, deleted_at__isnull=True)
            if expected_leaf is not ... and expected_leaf != locked.leaf_entry_id:
                raise AppendConflict(
                    expected_leaf if isinstance(expected_leaf, str) else None, locked.leaf_entry_id
                )
            wanted = placement.wanted_ids(prepared, locked.leaf_entry_id)
            known = set(_existing_ids(locked, wanted))
            values = self._resolve(locked, prepared, known)
            domain = [entry_from_value(0, v) for v in values]
            rows = self.append_lines(
                locked,
                domain,
                [js_stringify(v) for v in values],
                where=lambda i: f"entry {i}",
                author=author,
                quota=quota,
            )
            if log is not None:
                log.write(locked)
        for name in COUNTERS:
            setattr(session, name, getattr(locked, name))
        return rows

    @staticmethod
    def _resolve(session: ChatSession, prepared: placement.Prepared, known: set[str]) -> list[dict[str, Any]]:
        """Resolve the batch; a drawn id must not meet a stored one either (checked after drawing)."""
        while True:
            values = placement.resolve(prepared, session.leaf_entry_id, known)
            drawn = {v["id"] for v, given in zip(values, prepared.explicit, strict=True) if not given}
            clash = set(_existing_ids(session, drawn))
            if not clash:
                return values
            known |= clash  # drawn again, avoiding what is known now

    # -- verbatim lines ------------------------------------------------------------------------------

    def append_lines(
        self,
        session: ChatSession,
        entries: Sequence[DomainEntry],
        raws: Sequence[str],
        *,
        where: Callable[[int], str],
        author: Author,
        move_leaf: bool = True,
        quota: bool = True,
    ) -> list[Entry]:
        for i, entry in enumerate(entries):
            check_line(entry, where(i))
        size = sum(line_bytes(raw) for raw in raws)
        if quota:
            check_quotas(session, entries=len(entries), size=size)
        parents = _parent_facts(session, entries)
        counters = placement.Counters(
            session.next_seq,
            session.next_segment,
            session.entry_count,
            session.message_count,
            session.name,
            session.leaf_entry_id,
            session.leaf_seq,
        )
        placed = placement.place(entries, parents, counters, move_leaf=move_leaf)
        writer = author_pk(author)
        rows = [
            _row(session, entry, raw, spot, writer)
            for entry, raw, spot in zip(entries, raws, placed.rows, strict=True)
        ]
        Entry.objects.bulk_create(rows)
        tool_index.record_entries(
            session, ((r.seq, r.entry_id, e.payload) for r, e in zip(rows, entries, strict=True))
        )
        context_sums.record_rows(session, entries, [(r.seq, r.parent_seq, r.depth) for r in placed.rows])
        _write_segments(session, placed.segments)
        after = placed.counters
        session.next_seq, session.next_segment = after.next_seq, after.next_segment
        session.entry_count, session.message_count, session.name = (
            after.entry_count,
            after.message_count,
            after.name,
        )
        session.leaf_entry_id, session.leaf_seq = after.leaf_id, after.leaf_seq
        session.stored_bytes += size
        session.save()
        if rows:
            last = rows[-1].seq
            transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=last))
            transaction.on_commit(partial(signals.announce_committed, session.pk, rows[0].seq, last, rows))
            signals.entries_stored.send(
                ChatSession, session=session, first_seq=rows[0].seq, last_seq=last, rows=rows
            )
        return rows

    # -- a whole session -----------------------------------------------------------------------------

    def insert_all(
        self,
        session: ChatSession,
        entries: Sequence[DomainEntry],
        lines: Iterable[tuple[str, Any, str]],
        *,
        size: int,
        author: Author,
        copied_authors: Mapping[str, int | None] | None = None,
        replacing: int = 0,
        checked: bool = True,
        own: Sequence[OwnSums] | None = None,
        tools: tool_index.Spool | None = None,
    ) -> None:
        check_quotas(session, entries=len(entries), size=size, replacing=replacing)
        tree = SessionTree(entries)
        facts, segments = tree.path_facts()
        depths, segs, comps, models, thinks = facts.columns()
        writer = author_pk(author)
        copied = copied_authors or {}
        tip: dict[int, tuple[int, int]] = {}
        first: dict[int, int] = {}
        for seq, depth in enumerate(depths):
            if depth >= 0:
                tip[segs[seq]] = (seq, depth)
                first.setdefault(segs[seq], seq)

        steps = file_steps.NewSteps(session, ((s.index, s.parent_segment, s.start_depth) for s in segments))
        # Whole payloads (a sync, a fork): what they say about tools and the context's size is worked out
        # as they are copied in too, while the database is the one working.
        whole = tools is None
        spool = tool_index.Spool() if tools is None else tools
        measured = OwnColumns()
        sums = measured if own is None else own

        def rows() -> Iterator[tuple[Any, ...]]:
            for seq, (entry, (raw, stamp, text)) in enumerate(zip(entries, lines, strict=True)):
                if checked:
                    check_line(entry, f"entry {seq + 1}")
                if whole and says_anything(facts := tool_facts(entry.payload)):
                    spool.add(seq, entry.id, facts)
                if own is None:
                    measured.append(own_sums(entry))
                parent = None if tree.parent[seq] == -1 else tree.parent[seq]
                kind, entry_role = entry.type or "", role(entry)
                in_tree = depths[seq] >= 0
                depth = depths[seq] if in_tree else None
                segment = segs[seq] if in_tree else None
                # Worked out while the server stores the rows before it (the file-steps pass was a
                # fifth of a 100k-entry import when it read the lines back).
                steps.feed(seq, parent, entry.id, kind, entry_role, segment, depth, raw)
                yield (
                    session.pk,
                    seq,
                    entry.id,
                    entry.parent_id,
                    kind,
                    entry_role,
                    stamp if isinstance(stamp, str) else "",
                    raw,
                    parent,
                    depth,
                    segment,
                    comps[seq] if in_tree and comps[seq] >= 0 else None,
                    models[seq] if in_tree and models[seq] >= 0 else None,
                    thinks[seq] if in_tree and thinks[seq] >= 0 else None,
                    text,
                    copied.get(entry.id, writer) if entry.id is not None else writer,
                )

        with steps, closing(spool):
            self._write_all(rows())
            steps.stored(len(entries))  # before the next writes, so what it holds is freed
            tool_index.record_spooled(session, spool)
        context_sums.record_tree(session, entries, tree.parent, sums)
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
        session.stored_bytes = size
        session.save()
        steps.finish()
        if entries:
            transaction.on_commit(partial(signals.announce_committed, session.pk, 0, len(entries) - 1))
            signals.entries_stored.send(
                ChatSession, session=session, first_seq=0, last_seq=len(entries) - 1, rows=None
            )

    def _write_all(self, rows: Iterable[tuple[Any, ...]]) -> None:
        table = Entry._meta.db_table
        placeholders = ", ".join(["%s"] * len(COLUMNS))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({placeholders})", list(rows)
            )


def _prepare(entries: Sequence[Any]) -> placement.Prepared:
    try:
        return placement.prepare(entries)
    except Unstorable as exc:
        # The same answer an import gives for the same value.
        raise InvalidSessionFile(str(exc)) from exc


def _existing_ids(session: ChatSession, ids: set[str]) -> list[str]:
    if not ids:
        return []
    found = Entry.objects.filter(session=session, entry_id__in=ids).values_list("entry_id", flat=True)
    return [entry_id for entry_id in found if entry_id is not None]  # all of them: the filter named each


def _parent_facts(session: ChatSession, entries: Sequence[DomainEntry]) -> dict[str, placement.ParentFacts]:
    """Return the facts of the stored entries the batch names as parents (the newest row of an id)."""
    parent_ids = {e.parent_id for e in entries if e.parent_id is not None}
    if not parent_ids:
        return {}
    rows = list(
        Entry.objects.filter(session=session, entry_id__in=parent_ids, depth__isnull=False).order_by("seq")
    )
    tips = dict(
        Segment.objects.filter(session=session, index__in={r.segment for r in rows}).values_list(
            "index", "tip_seq"
        )
    )
    facts: dict[str, placement.ParentFacts] = {}
    for row in rows:
        assert row.entry_id is not None and row.depth is not None and row.segment is not None
        facts[row.entry_id] = placement.ParentFacts(  # the newest duplicate wins
            row.seq,
            row.depth,
            row.segment,
            row.compaction_seq,
            row.model_seq,
            row.thinking_seq,
            tip=tips.get(row.segment) == row.seq,
        )
    return facts


def _row(session: ChatSession, entry: DomainEntry, raw: str, spot: placement.Placed, author: int) -> Entry:
    return Entry(
        session=session,
        seq=spot.seq,
        entry_id=entry.id,
        parent_id=entry.parent_id,
        type=entry.type or "",
        role=role(entry),
        timestamp=timestamp(entry),
        raw=raw,
        parent_seq=spot.parent_seq,
        depth=spot.depth,
        segment=spot.segment,
        compaction_seq=spot.compaction_seq,
        model_seq=spot.model_seq,
        thinking_seq=spot.thinking_seq,
        search_text=search_text(entry.payload),
        author_id=author,
    )


def _write_segments(session: ChatSession, segments: dict[int, placement.SegmentTip]) -> None:
    opened = [s for s in segments.values() if s.opened]
    Segment.objects.bulk_create(
        [
            Segment(
                session=session,
                index=s.index,
                parent_index=s.parent_index,
                start_depth=s.start_depth,
                first_seq=s.first_seq,
                tip_seq=s.tip_seq,
                tip_depth=s.tip_depth,
            )
            for s in opened
        ]
    )
    for s in segments.values():
        if not s.opened:
            Segment.objects.filter(session=session, index=s.index).update(
                tip_seq=s.tip_seq, tip_depth=s.tip_depth
            )


@cache
def _store_for(vendor: str) -> EntryStore:
    if vendor == "postgresql":
        from sessions_app.services.leaf_append import PostgresStore

        return PostgresStore()
    return PortableStore()


def entry_store() -> EntryStore:
    """Return the backend for this database (chosen once per vendor)."""
    return _store_for(connection.vendor)
