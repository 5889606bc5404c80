"""The entry store's PostgreSQL backend: chains in one locked round trip, whole files by COPY.

A chain is what almost every append is: entries that each hang under the one before, the first under
the leaf, under a named parent or as a new root (an API append, a run's turn, a label, a summary).
Concurrent writers of one session queue on its row lock, so what happens under the lock sets the p99.
Everything that does not need the lock is done before taking it: validation, ids, timestamps, the
verbatim lines (the database splices in the first one's parent when that is the leaf), search text and
the chain's placement relative to its parent (the domain's ``relative_chain``: seq, depth and anchor
offsets). Under the lock the database runs two
statements sent together in one pipeline: the first takes the row lock; the second, a new statement and
so a new snapshot that sees what the writer before committed, reads the parent's path facts, claims the
seqs, checks the quotas, moves the leaf and the counters, inserts every entry (the parent's facts plus
the domain's offsets) and extends or opens their segment. The client does not speak again until the
database has answered both, so no client turnaround happens under the lock before the commit. Other
batches go the portable way (``store.PortableStore``); the conformance test holds both to one result.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from actionlog.facade import PendingAction
from core import realtime
from pitree import placement
from pitree.attribution import Author
from pitree.entries import ANCHORS, entry_from_value
from pitree.jsjson import js_stringify
from pitree.searchable import search_text
from pitree.tree import js_trim
from sessions_app import signals
from sessions_app.models import ChatSession, Entry
from sessions_app.services import context_sums, tool_index
from sessions_app.services.errors import AppendConflict, InvalidEntries, QuotaExceeded
from sessions_app.services.store import (
    COLUMNS,
    PortableStore,
    _prepare,
    bytes_quota,
    line_bytes,
    role,
    session_limit,
    timestamp,
)

__all__ = ["PostgresStore"]

_LOCK = "SELECT 1 FROM sessions_app_chatsession WHERE id = %(pk)s FOR NO KEY UPDATE"
# Who writes: stored once per distinct author, in the same round trip and before the session's lock
# (the append statement, a new snapshot, then finds it by key).
_AUTHOR = (
    "INSERT INTO sessions_app_entryauthor (key, kind, name, user_id, via, imported) "
    "VALUES (%(ak)s, %(a_kind)s, %(a_name)s, %(a_user)s, %(a_via)s, %(a_imported)s) "
    "ON CONFLICT (key) DO NOTHING"
)

# ``s`` is the locked session row as the previous writer left it (none once the session is deleted);
# ``p`` the parent row (``{parent}``: the leaf, the newest entry with the named id, or none for a new
# root); ``ok`` holds one row only when the append may go ahead (leaf as expected, no id taken, a named
# parent found). The data-modifying parts act on ``ok``, so a refused append changes nothing and the
# answer says why.
_APPEND = """
WITH s AS (
    SELECT next_seq, leaf_seq, leaf_entry_id, next_segment, entry_count, owner_id
    FROM sessions_app_chatsession WHERE id = %(pk)s AND deleted_at IS NULL
),
u AS ({used}),
p AS (
    SELECT e.seq, e.depth, e.segment, e.compaction_seq, e.model_seq, e.thinking_seq
    FROM s JOIN sessions_app_entry e ON e.session_id = %(pk)s AND {parent}
    ORDER BY e.seq DESC LIMIT 1
),
facts AS (
    SELECT p.seq, p.depth, p.segment, p.compaction_seq, p.model_seq, p.thinking_seq,
        coalesce(g.tip_seq = p.seq, false) AS extend
    FROM p LEFT JOIN sessions_app_segment g ON g.session_id = %(pk)s AND g."index" = p.segment
    WHERE p.depth IS NOT NULL
),
taken AS (
    SELECT ARRAY(
        SELECT entry_id FROM sessions_app_entry WHERE session_id = %(pk)s AND entry_id = ANY(%(ids)s::text[])
    ) AS ids
),
ok AS (
    SELECT s.next_seq AS first, s.leaf_entry_id AS old_leaf,
        CASE WHEN %(under_leaf)s THEN s.leaf_entry_id ELSE %(parent_id)s END AS parent_id,
        f.seq AS parent_seq, coalesce(f.depth + 1, 0) AS depth,
        CASE WHEN f.extend THEN f.segment ELSE s.next_segment END AS segment,
        f.segment AS parent_segment, coalesce(f.extend, false) AS extend,
        f.compaction_seq, f.model_seq, f.thinking_seq,
        (SELECT id FROM sessions_app_entryauthor WHERE key = %(ak)s) AS author
    FROM s CROSS JOIN taken LEFT JOIN facts f ON true
    CROSS JOIN u
    WHERE cardinality(taken.ids) = 0
        AND (%(any_leaf)s OR s.leaf_entry_id IS NOT DISTINCT FROM %(expected)s)
        AND (%(parent_id)s::text IS NULL OR EXISTS (SELECT FROM p))
        AND (%(max_entries)s = 0 OR s.entry_count + %(n)s <= %(max_entries)s)
        AND (%(quota)s = 0 OR u.used + %(bytes)s + CASE WHEN %(under_leaf)s
            THEN octet_length(coalesce(to_json(s.leaf_entry_id)::text, 'null')) ELSE 0 END <= %(quota)s)
),
claim AS (
    UPDATE sessions_app_chatsession AS c SET
        next_seq = ok.first + %(n)s,
        entry_count = c.entry_count + %(n)s,
        message_count = c.message_count + %(messages)s,
        leaf_entry_id = %(leaf)s,
        leaf_seq = ok.first + %(n)s - 1,
        next_segment = c.next_segment + CASE WHEN ok.extend THEN 0 ELSE 1 END,
        name = coalesce(%(name)s, c.name),
        stored_bytes = c.stored_bytes + %(bytes)s + CASE WHEN %(under_leaf)s
            THEN octet_length(coalesce(to_json(ok.parent_id)::text, 'null')) ELSE 0 END,
        updated_at = %(now)s
    FROM ok WHERE c.id = %(pk)s
    RETURNING c.entry_count, c.message_count, c.name, c.next_segment, c.stored_bytes
),
stored AS (
    INSERT INTO sessions_app_entry (session_id, seq, entry_id, parent_id, type, role, timestamp, raw,
        parent_seq, depth, segment, compaction_seq, model_seq, thinking_seq, search_text, author_id)
    SELECT %(pk)s, ok.first + b.at, b.id,
        CASE WHEN b.up IS NULL THEN ok.parent_id ELSE b.parent END,
        b.type, b.role, b.stamp,
        coalesce(b.raw, %(head)s || coalesce(to_json(ok.parent_id)::text, 'null') || %(tail)s),
        CASE WHEN b.up IS NULL THEN ok.parent_seq ELSE ok.first + b.up END,
        ok.depth + b.depth, ok.segment,
        coalesce(ok.first + b.compaction, ok.compaction_seq),
        coalesce(ok.first + b.model, ok.model_seq),
        coalesce(ok.first + b.thinking, ok.thinking_seq),
        b.text, ok.author
    FROM ok, unnest(%(at)s::int[], %(up)s::int[], %(depths)s::int[], %(ids)s::text[], %(parents)s::text[],
        %(types)s::text[], %(roles)s::text[], %(stamps)s::text[], %(raws)s::text[], %(texts)s::text[],
        %(compaction_seq)s::int[], %(model_seq)s::int[], %(thinking_seq)s::int[])
        AS b(at, up, depth, id, parent, type, role, stamp, raw, text, compaction, model, thinking)
    RETURNING id, seq
),
extended AS (
    UPDATE sessions_app_segment AS g SET tip_seq = ok.first + %(tip_at)s, tip_depth = ok.depth + %(tip_depth)s
    FROM ok WHERE ok.extend AND g.session_id = %(pk)s AND g."index" = ok.segment
),
opened AS (
    INSERT INTO sessions_app_segment (session_id, "index", parent_index, start_depth, first_seq, tip_seq,
        tip_depth)
    SELECT %(pk)s, ok.segment, ok.parent_segment, ok.depth, ok.first, ok.first + %(tip_at)s,
        ok.depth + %(tip_depth)s
    FROM ok WHERE NOT ok.extend
)
SELECT s.leaf_entry_id, taken.ids, EXISTS (SELECT FROM p), s.entry_count, u.used, ok.first, ok.parent_id,
    ok.parent_seq, ok.depth, ok.segment, ok.compaction_seq, ok.model_seq, ok.thinking_seq, claim.entry_count,
    claim.message_count, claim.name, claim.next_segment, claim.stored_bytes,
    (SELECT array_agg(id ORDER BY seq) FROM stored), ok.author
FROM s CROSS JOIN taken CROSS JOIN u LEFT JOIN ok ON true LEFT JOIN claim ON true
"""
# What the owner's live sessions store, read only when a stored-bytes quota is configured.
_USED = {
    True: "SELECT coalesce(sum(stored_bytes), 0) AS used FROM sessions_app_chatsession "
    "WHERE owner_id = (SELECT owner_id FROM s) AND deleted_at IS NULL",
    False: "SELECT 0::bigint AS used",
}
_PARENTS = {"leaf": "e.seq = s.leaf_seq", "id": "e.entry_id = %(parent_id)s", "root": "false"}


def _compact(sql: str) -> str:
    """Drop the whitespace SQL does not need (the statement holds no comments or spaced literals)."""
    return re.sub(r"\s*([,()=+<|-])\s*", r"\1", " ".join(sql.split()))


# Whitespace dropped: psycopg caches the conversion of statements up to 4096 characters only, and
# converting this one on every append cost a fifth of a millisecond of CPU.
_STATEMENTS = {
    (mode, quota): _compact(_APPEND.replace("{parent}", parent).replace("{used}", _USED[quota]))
    for mode, parent in _PARENTS.items()
    for quota in (True, False)
}


class PostgresStore(PortableStore):
    """The PostgreSQL backend: chains in one pipelined round trip, whole files by COPY."""

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
        prepared = _prepare(entries)
        if not prepared.chain:
            # Branches within one batch are rare (an import's tail, a summary with its label): the
            # portable path reads what it needs under the lock.
            return self._append_prepared(
                session, prepared, author=author, expected_leaf=expected_leaf, quota=quota, log=log
            )
        chain = _chain(prepared)
        for _ in range(8):
            try:
                return _attempt(session, chain, expected_leaf, quota, log, author)
            except _Redraw as redraw:
                # A generated id met a stored one (rare): nothing was written; draw those ids again.
                taken = set(redraw.args[0])
                for i, value in enumerate(prepared.values):
                    if not prepared.explicit[i] and value["id"] in taken:
                        value["id"] = None
                placement.draw_ids(prepared, taken)
                placement.link(prepared, chain.parent_id)
        raise InvalidEntries("could not draw fresh entry ids")

    def _write_all(self, rows: Iterable[tuple[Any, ...]]) -> None:
        table = Entry._meta.db_table
        with connection.cursor() as cursor:
            raw_cursor = cursor.cursor
            with raw_cursor.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)


class _Redraw(Exception):
    pass


@dataclass(slots=True)
class _Chain:
    """A validated chain, ready to store: everything but what the lock decides."""

    prepared: placement.Prepared  # the first one's parentId is filled in under the lock (mode "leaf")
    mode: str  # "leaf", "id" or "root": where the first entry hangs
    parent_id: str | None


def _chain(prepared: placement.Prepared) -> _Chain:
    first = prepared.first_parent
    mode = "leaf" if first is ... else "root" if first is None else "id"
    # Ids drawn now are checked against the stored ones under the lock (and drawn again on a clash).
    placement.draw_ids(prepared, set())
    parent = first if isinstance(first, str) else None
    placement.link(prepared, parent)
    return _Chain(prepared, mode, parent)


def _attempt(
    session: ChatSession,
    chain: _Chain,
    expected_leaf: object,
    quota: bool,
    log: PendingAction | None,
    author: Author,
) -> list[Entry]:
    params = {**_params(session, chain, expected_leaf, quota), **_author_params(author)}
    statement = _STATEMENTS[chain.mode, bool(params["quota"])]
    kinds = set(zip(params["types"], params["roles"], strict=True))
    if not connection.in_atomic_block and not signals.entries_stored_wanted(kinds):
        # Nothing else joins this transaction (no caller's, no receiver's writes): the commit goes out
        # with the statements, so the lock is held for the database's work only.
        row = log.insert_sql(session, leaf=params["leaf"], stamp=params["now"]) if log else None
        answer = _store_and_commit(statement, params, row)
        rows = _rows(session, chain, params, answer, expected_leaf)
        realtime.session_changed(session_id=session.pk, last_seq=rows[-1].seq)
        signals.announce_committed(session.pk, rows[0].seq, rows[-1].seq, rows)
    else:
        with transaction.atomic(), connection.cursor() as cursor, connection.cursor() as sums:
            # Errors arrive when the pipeline ends, past the cursor's own translation into Django's.
            with connection.wrap_database_errors, connection.connection.pipeline():  # type: ignore[union-attr]
                cursor.execute(_AUTHOR, params)
                cursor.execute(_LOCK, params)
                cursor.execute(statement, params)
                sums.execute(context_sums.CHAIN_SQL, params)
                for sql in tool_index.chain_statements(params):
                    sums.execute(sql, params)
            rows = _rows(session, chain, params, cursor.fetchone(), expected_leaf)
            first, last = rows[0].seq, rows[-1].seq
            transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=last))
            transaction.on_commit(partial(signals.announce_committed, session.pk, first, last, rows))
            signals.entries_stored.send(
                ChatSession, session=session, first_seq=first, last_seq=last, rows=rows
            )
            if log is not None:
                log.write(session)
    session.leaf_entry_id, session.leaf_seq, session.next_seq = (
        rows[-1].entry_id,
        rows[-1].seq,
        rows[-1].seq + 1,
    )
    session.updated_at = params["now"]
    return rows


def _author_params(author: Author) -> dict[str, Any]:
    return {
        "ak": author.key(),
        "a_kind": author.kind,
        "a_name": author.name,
        "a_user": author.user_id,
        "a_via": author.via,
        "a_imported": author.imported,
    }


def _store_and_commit(
    statement: str, params: dict[str, Any], log_row: tuple[str, list[Any]] | None
) -> tuple[Any, ...] | None:
    """Run the transaction in one round trip: BEGIN, the lock, the append, its log row and COMMIT."""
    with connection.cursor() as control, connection.cursor() as cursor:
        raw = connection.connection
        assert raw is not None and raw.autocommit  # outside any atomic block, as the caller checked
        try:
            with connection.wrap_database_errors, raw.pipeline():
                control.execute("BEGIN")
                control.execute(_AUTHOR, params)
                control.execute(_LOCK, params)
                cursor.execute(statement, params)
                control.execute(context_sums.CHAIN_SQL, params)
                for sql in tool_index.chain_statements(params):
                    control.execute(sql, params)
                if log_row is not None:
                    control.execute(*log_row)
                control.execute("COMMIT")
        except BaseException:
            # An error stops the pipeline before COMMIT, leaving the transaction open: end it.
            if not raw.closed and raw.info.transaction_status != TransactionStatus.IDLE:
                raw.rollback()
            raise
        return cursor.fetchone()


def _params(session: ChatSession, chain: _Chain, expected_leaf: object, quota: bool) -> dict[str, Any]:
    """Return the append statement's parameters: everything about the entries that needs no lock.

    Where each entry lands relative to the chain's parent is the domain's ``relative_chain``; the
    statement adds the parent's facts, which only the lock makes final.
    """
    prepared = chain.prepared.values
    ids = [p["id"] for p in prepared]
    domain = [entry_from_value(0, p) for p in prepared]
    spots = placement.relative_chain(domain)
    under_leaf = chain.mode == "leaf"
    raws: list[str | None] = [
        None if under_leaf and i == 0 else js_stringify(p) for i, p in enumerate(prepared)
    ]
    head, tail = _around_parent(prepared[0]) if under_leaf else ("", "")
    size = sum(line_bytes(r) for r in raws if r is not None) + line_bytes(head) + line_bytes(tail)
    name: str | None = None
    for p in prepared:
        if p["type"] == "session_info":
            name = (js_trim(p["name"]) if isinstance(p.get("name"), str) else "") or ""
    types = [p["type"] for p in prepared]
    return {
        "pk": session.pk,
        "n": len(prepared),
        "messages": types.count("message"),
        "leaf": ids[-1],
        "name": name,
        "now": timezone.now(),
        "any_leaf": expected_leaf is ...,
        "expected": expected_leaf if isinstance(expected_leaf, str) else None,
        "under_leaf": under_leaf,
        "parent_id": chain.parent_id,
        "max_entries": session_limit() if quota else 0,
        "quota": bytes_quota() if quota else 0,
        "bytes": size,
        "at": [s.seq for s in spots],
        "up": [s.parent_seq if s.parent_seq is not None and s.parent_seq >= 0 else None for s in spots],
        "depths": [s.depth for s in spots],
        "tip_at": spots[-1].seq,
        "tip_depth": spots[-1].depth,
        "ids": ids,
        "parents": [p["parentId"] for p in prepared],
        "types": types,
        "roles": [role(e) for e in domain],
        "stamps": [timestamp(e) for e in domain],
        "raws": raws,
        "head": head,
        "tail": tail,
        "texts": [search_text(p) for p in prepared],
        **{anchor: [getattr(s, anchor) for s in spots] for anchor in ANCHORS},
        **context_sums.chain_params(domain),
        **tool_index.chain_params(session, prepared),
    }


def _rows(
    session: ChatSession,
    chain: _Chain,
    params: dict[str, Any],
    answer: tuple[Any, ...] | None,
    expected_leaf: object,
) -> list[Entry]:
    """Return the stored rows as the database placed them, or raise why it did not append."""
    if answer is None:
        raise ChatSession.DoesNotExist(f"session {session.pk} is gone")
    current, taken, parent_found, count, used, first, parent_id, parent_seq, depth, segment, *rest = answer
    *bases, entry_count, message_count, name, next_segment, stored_bytes, pks, author = rest
    if first is None:
        _refuse(chain, params, expected_leaf, current, taken, parent_found, count, used)
    ids = params["ids"]
    rows: list[Entry] = []
    for i, pk in enumerate(pks):
        up = params["up"][i]
        row = Entry(
            pk=pk,
            session=session,
            seq=first + params["at"][i],
            entry_id=ids[i],
            parent_id=parent_id if up is None else ids[i - 1],
            type=params["types"][i],
            role=params["roles"][i],
            timestamp=params["stamps"][i],
            raw=params["raws"][i] or f"{params['head']}{js_stringify(parent_id)}{params['tail']}",
            search_text=params["texts"][i],
            parent_seq=parent_seq if up is None else first + up,
            depth=depth + params["depths"][i],
            segment=segment,
            author_id=author,
        )
        for anchor, base in zip(ANCHORS, bases, strict=True):
            offset = params[anchor][i]
            setattr(row, anchor, base if offset is None else first + offset)
        rows.append(row)
    session.entry_count, session.message_count, session.name = entry_count, message_count, name
    session.next_segment, session.stored_bytes = next_segment, stored_bytes
    return rows


def _around_parent(entry: dict[str, Any]) -> tuple[str, str]:
    """Return the entry's line before and after its parentId value.

    The leaf is known only under the lock, so the database splices it in, escaped as JSON.stringify
    escapes it (``to_json`` does the same for any text PostgreSQL can hold). A marker value finds the
    spot; one that occurs elsewhere in the entry is passed over.
    """
    for n in itertools.count():
        marker = js_stringify(f"piweb-parent-{n}")
        raw = js_stringify({**entry, "parentId": f"piweb-parent-{n}"})
        if raw.count(marker) == 1:
            head, _, tail = raw.partition(marker)
            return head, tail
    raise AssertionError("unreachable")


def _refuse(
    chain: _Chain,
    params: dict[str, Any],
    expected_leaf: object,
    current: str | None,
    taken: list[str],
    parent_found: bool,
    count: int,
    used: int,
) -> None:
    """Raise why the database did not append (it changed nothing)."""
    if expected_leaf is not ... and expected_leaf != current:
        raise AppendConflict(expected_leaf if isinstance(expected_leaf, str) else None, current)
    values, explicit = chain.prepared.values, chain.prepared.explicit
    # The checks in the order the portable path makes them: entry by entry, its id before its parent.
    clash = [i for i, p in enumerate(values) if p["id"] in set(taken) and explicit[i]]
    if clash and clash[0] == 0:
        raise InvalidEntries(f"entry 0: id {values[0]['id']!r} already exists in this session")
    if chain.mode == "id" and not parent_found:
        raise InvalidEntries(f"entry 0: parent {chain.parent_id!r} is not an entry of this session")
    if clash:
        raise InvalidEntries(
            f"entry {clash[0]}: id {values[clash[0]]['id']!r} already exists in this session"
        )
    if taken:
        raise _Redraw(taken)
    limit, n = params["max_entries"], params["n"]
    if limit and count + n > limit:
        raise QuotaExceeded(
            f"The session holds {count} entries; {n} more would pass the limit of {limit} entries a "
            "session holds."
        )
    quota, size = params["quota"], params["bytes"]
    if params["under_leaf"]:
        size += line_bytes(js_stringify(current))  # the leaf the first line names
    raise QuotaExceeded(
        f"Storing these entries ({size} bytes) would bring your sessions to {used + size} bytes; the "
        f"limit is {quota} bytes."
    )
