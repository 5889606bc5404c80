"""Appends of a chain of entries with one locked round trip (PostgreSQL).

A chain is what almost every append is: entries that each hang under the one before, the first under
the leaf, under a named parent or as a new root (an API append, a run's turn, a label, a summary).
Concurrent writers of one session queue on its row lock, so what happens under the lock sets the p99.
Everything that does not need the lock is done before taking it: validation, ids, timestamps, the
verbatim lines (the database splices in the first one's parent when that is the leaf), search text and
which entry of the batch each projection anchor points at. Under the lock the database runs two
statements sent together in one pipeline: the first takes the row lock; the second, a new statement and
so a new snapshot that sees what the writer before committed, reads the parent's path facts, claims the
seqs, moves the leaf and the counters, inserts every entry and extends or opens their segment. The
client does not speak again until the database has answered both, so no client turnaround happens
under the lock before the commit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from .. import realtime, signals
from ..domain.entries import entry_from_value
from ..domain.jsjson import js_stringify
from ..domain.jsonl import generate_entry_id
from ..domain.search import search_text
from ..domain.storable import check_json
from ..domain.timestamps import now_iso
from ..domain.tree import js_trim
from ..models import ChatSession, Entry
from .actions import PendingAction
from .errors import AppendConflict, InvalidEntries
from .rows import ANCHORS, anchor_of, check_storable, role, timestamp

__all__ = ["append_chain", "eligible"]

_LOCK = "SELECT 1 FROM sessions_app_chatsession WHERE id = %(pk)s FOR NO KEY UPDATE"

# ``s`` is the locked session row as the previous writer left it (none once the session is deleted);
# ``p`` the parent row (``{parent}``: the leaf, the newest entry with the named id, or none for a new
# root); ``ok`` holds one row only when the append may go ahead (leaf as expected, no id taken, a named
# parent found). The data-modifying parts act on ``ok``, so a refused append changes nothing and the
# answer says why.
_APPEND = """
WITH s AS (
    SELECT next_seq, leaf_seq, leaf_entry_id, next_segment FROM sessions_app_chatsession
    WHERE id = %(pk)s AND deleted_at IS NULL
),
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
        f.compaction_seq, f.model_seq, f.thinking_seq
    FROM s CROSS JOIN taken LEFT JOIN facts f ON true
    WHERE cardinality(taken.ids) = 0
        AND (%(any_leaf)s OR s.leaf_entry_id IS NOT DISTINCT FROM %(expected)s)
        AND (%(parent_id)s::text IS NULL OR EXISTS (SELECT FROM p))
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
        updated_at = %(now)s
    FROM ok WHERE c.id = %(pk)s
    RETURNING c.entry_count, c.message_count, c.name, c.next_segment
),
stored AS (
    INSERT INTO sessions_app_entry (session_id, seq, entry_id, parent_id, type, role, timestamp, raw,
        parent_seq, depth, segment, compaction_seq, model_seq, thinking_seq, search_text)
    SELECT %(pk)s, ok.first + b.i - 1, b.id,
        CASE WHEN b.i = 1 THEN ok.parent_id ELSE b.parent END,
        b.type, b.role, b.stamp,
        coalesce(b.raw, %(head)s || coalesce(to_json(ok.parent_id)::text, 'null') || %(tail)s),
        CASE WHEN b.i = 1 THEN ok.parent_seq ELSE ok.first + b.i - 2 END,
        ok.depth + b.i - 1, ok.segment,
        coalesce(ok.first + b.compaction, ok.compaction_seq),
        coalesce(ok.first + b.model, ok.model_seq),
        coalesce(ok.first + b.thinking, ok.thinking_seq),
        b.text
    FROM ok, unnest(%(ids)s::text[], %(parents)s::text[], %(types)s::text[], %(roles)s::text[],
        %(stamps)s::text[], %(raws)s::text[], %(texts)s::text[], %(compaction_seq)s::int[],
        %(model_seq)s::int[], %(thinking_seq)s::int[])
        WITH ORDINALITY AS b(id, parent, type, role, stamp, raw, text, compaction, model, thinking, i)
    RETURNING id, seq
),
extended AS (
    UPDATE sessions_app_segment AS g SET tip_seq = ok.first + %(n)s - 1, tip_depth = ok.depth + %(n)s - 1
    FROM ok WHERE ok.extend AND g.session_id = %(pk)s AND g."index" = ok.segment
),
opened AS (
    INSERT INTO sessions_app_segment (session_id, "index", parent_index, start_depth, first_seq, tip_seq,
        tip_depth)
    SELECT %(pk)s, ok.segment, ok.parent_segment, ok.depth, ok.first, ok.first + %(n)s - 1,
        ok.depth + %(n)s - 1
    FROM ok WHERE NOT ok.extend
)
SELECT s.leaf_entry_id, taken.ids, EXISTS (SELECT FROM p), ok.first, ok.parent_id, ok.parent_seq,
    ok.depth, ok.segment, ok.compaction_seq, ok.model_seq, ok.thinking_seq, claim.entry_count,
    claim.message_count, claim.name, claim.next_segment, (SELECT array_agg(id ORDER BY seq) FROM stored)
FROM s CROSS JOIN taken LEFT JOIN ok ON true LEFT JOIN claim ON true
"""
_STATEMENTS = {
    "leaf": _APPEND.replace("{parent}", "e.seq = s.leaf_seq"),
    "id": _APPEND.replace("{parent}", "e.entry_id = %(parent_id)s"),
    "root": _APPEND.replace("{parent}", "false"),
}


def eligible(entries: Sequence[Any]) -> bool:
    """Return whether a batch is a chain on PostgreSQL: objects, each after the first under the one before.

    Those after the first may leave out ``parentId`` or name the entry before them by its given id.
    """
    if connection.vendor != "postgresql" or not all(isinstance(e, dict) for e in entries):
        return False
    for before, entry in itertools.pairwise(entries):
        if "parentId" in entry and not (
            isinstance(entry["parentId"], str) and entry["parentId"] == before.get("id")
        ):
            return False
    return True


@dataclass(slots=True)
class _Chain:
    """A validated chain, ready to store: everything but what the lock decides."""

    prepared: list[dict[str, Any]]  # Pi's key order; the first one's parentId is filled in under the lock
    explicit: set[int]  # entries that came with their own id (a clash refuses them instead of redrawing)
    mode: str  # "leaf", "id" or "root": where the first entry hangs
    parent_id: str | None


def append_chain(
    session: ChatSession,
    entries: Sequence[dict[str, Any]],
    expected_leaf: object,
    *,
    log: PendingAction | None,
) -> list[Entry]:
    """Append a chain of entries. The caller checked access; this opens the transaction (or joins one).

    ``log`` is the action-log row of the append, written in its transaction (None: the caller logs).
    """
    chain = _prepare(entries)
    for _ in range(8):
        try:
            return _attempt(session, chain, expected_leaf, log)
        except _Redraw as redraw:
            # A generated id met a stored one (rare): nothing was written; draw those ids again.
            taken = set(redraw.args[0])
            avoid = taken | {p["id"] for p in chain.prepared}
            for i, p in enumerate(chain.prepared):
                if i not in chain.explicit and p["id"] in taken:
                    p["id"] = generate_entry_id(avoid)
                    avoid.add(p["id"])
            _link(chain)
    raise InvalidEntries("could not draw fresh entry ids")


class _Redraw(Exception):
    pass


def _attempt(
    session: ChatSession, chain: _Chain, expected_leaf: object, log: PendingAction | None
) -> list[Entry]:
    params = _params(session, chain, expected_leaf)
    kinds = set(zip(params["types"], params["roles"], strict=True))
    if not connection.in_atomic_block and not signals.entries_stored_wanted(kinds):
        # Nothing else joins this transaction (no caller's, no receiver's writes): the commit goes out
        # with the statements, so the lock is held for the database's work only.
        row = log.insert_sql(session, leaf=params["leaf"], stamp=params["now"]) if log else None
        answer = _store_and_commit(chain.mode, params, row)
        rows = _rows(session, chain, params, answer, expected_leaf)
        realtime.session_changed(session_id=session.pk, last_seq=rows[-1].seq)
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            # Errors arrive when the pipeline ends, past the cursor's own translation into Django's.
            with connection.wrap_database_errors, connection.connection.pipeline():  # type: ignore[union-attr]
                cursor.execute(_LOCK, params)
                cursor.execute(_STATEMENTS[chain.mode], params)
            rows = _rows(session, chain, params, cursor.fetchone(), expected_leaf)
            first, last = rows[0].seq, rows[-1].seq
            transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=last))
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


def _store_and_commit(
    mode: str, params: dict[str, Any], log_row: tuple[str, list[Any]] | None
) -> tuple[Any, ...] | None:
    """Run the transaction in one round trip: BEGIN, the lock, the append, its log row and COMMIT."""
    with connection.cursor() as control, connection.cursor() as cursor:
        raw = connection.connection
        assert raw is not None and raw.autocommit  # outside any atomic block, as the caller checked
        try:
            with connection.wrap_database_errors, raw.pipeline():
                control.execute("BEGIN")
                control.execute(_LOCK, params)
                cursor.execute(_STATEMENTS[mode], params)
                if log_row is not None:
                    control.execute(*log_row)
                control.execute("COMMIT")
        except BaseException:
            # An error stops the pipeline before COMMIT, leaving the transaction open: end it.
            if not raw.closed and raw.info.transaction_status != TransactionStatus.IDLE:
                raw.rollback()
            raise
        return cursor.fetchone()


def _params(session: ChatSession, chain: _Chain, expected_leaf: object) -> dict[str, Any]:
    """Return the append statement's parameters: everything about the entries that needs no lock."""
    prepared = chain.prepared
    ids = [p["id"] for p in prepared]
    domain = [entry_from_value(0, p) for p in prepared]
    anchors: dict[str, list[int | None]] = {name: [] for name in ANCHORS}
    last: dict[str, int] = {}
    for i, entry in enumerate(domain):
        kind = anchor_of(entry)
        if kind is not None:
            last[kind] = i  # the entry itself and those after it point here
        for name in ANCHORS:
            anchors[name].append(last.get(name))
    under_leaf = chain.mode == "leaf"
    raws: list[str | None] = [
        None if under_leaf and i == 0 else js_stringify(p) for i, p in enumerate(prepared)
    ]
    head, tail = _around_parent(prepared[0]) if under_leaf else ("", "")
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
        "under_leaf": chain.mode == "leaf",
        "parent_id": chain.parent_id,
        "ids": ids,
        "parents": [None, *ids[:-1]],
        "types": types,
        "roles": [role(e) for e in domain],
        "stamps": [timestamp(e) for e in domain],
        "raws": raws,
        "head": head,
        "tail": tail,
        "texts": [search_text(p) for p in prepared],
        **anchors,
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
    current, taken, parent_found, first, parent_id, parent_seq, depth, segment, *rest = answer
    *bases, entry_count, message_count, name, next_segment, pks = rest
    if first is None:
        _refuse(chain, expected_leaf, current, taken, parent_found)
    ids = params["ids"]
    rows: list[Entry] = []
    for i, pk in enumerate(pks):
        row = Entry(
            pk=pk,
            session=session,
            seq=first + i,
            entry_id=ids[i],
            parent_id=parent_id if i == 0 else ids[i - 1],
            type=params["types"][i],
            role=params["roles"][i],
            timestamp=params["stamps"][i],
            raw=params["raws"][i] or f"{params['head']}{js_stringify(parent_id)}{params['tail']}",
            search_text=params["texts"][i],
            parent_seq=parent_seq if i == 0 else first + i - 1,
            depth=depth + i,
            segment=segment,
        )
        for anchor, base in zip(ANCHORS, bases, strict=True):
            offset = params[anchor][i]
            setattr(row, anchor, base if offset is None else first + offset)
        rows.append(row)
    session.entry_count, session.message_count, session.name = entry_count, message_count, name
    session.next_segment = next_segment
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
    chain: _Chain, expected_leaf: object, current: str | None, taken: list[str], parent_found: bool
) -> None:
    """Raise why the database did not append (it changed nothing)."""
    if expected_leaf is not ... and expected_leaf != current:
        raise AppendConflict(expected_leaf if isinstance(expected_leaf, str) else None, current)
    # The checks in the order the general path makes them: entry by entry, its id before its parent.
    clash = [i for i, p in enumerate(chain.prepared) if p["id"] in set(taken) and i in chain.explicit]
    if clash and clash[0] == 0:
        raise InvalidEntries(f"entry 0: id {chain.prepared[0]['id']!r} already exists in this session")
    if chain.mode == "id" and not parent_found:
        raise InvalidEntries(f"entry 0: parent {chain.parent_id!r} is not an entry of this session")
    if clash:
        raise InvalidEntries(
            f"entry {clash[0]}: id {chain.prepared[clash[0]]['id']!r} already exists in this session"
        )
    raise _Redraw(taken)


def _prepare(entries: Sequence[dict[str, Any]]) -> _Chain:
    """Validate the entries and fill in id, timestamp and (but for the first) parentId in Pi's key order."""
    out: list[dict[str, Any]] = []
    batch: set[str] = set()
    explicit: set[int] = set()
    for index, entry in enumerate(entries):
        where = f"entry {index}"
        # Content strings are stored escaped in the verbatim line; only the depth and the extracted
        # columns (checked below) can make an entry unstorable.
        check_json(entry, where, strings=False)
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
        else:
            explicit.add(index)
        stamp = entry.get("timestamp")
        if stamp is None:
            stamp = now_iso()
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        prepared = {"type": kind, "id": entry_id, "parentId": None, "timestamp": stamp, **rest}
        domain = entry_from_value(0, prepared)
        name = prepared.get("name") if kind == "session_info" else None
        check_storable((entry_id, kind, role(domain), stamp, name), where)
        out.append(prepared)
        batch.add(entry_id)
    first = entries[0]
    parent = first.get("parentId", ...)
    if parent is not ... and parent is not None and not isinstance(parent, str):
        raise InvalidEntries("entry 0: 'parentId' must be a string or null")
    if isinstance(parent, str):
        check_storable((parent,), "entry 0")
    mode = "leaf" if parent is ... else "root" if parent is None else "id"
    chain = _Chain(out, explicit, mode, parent if isinstance(parent, str) else None)
    _link(chain)
    return chain


def _link(chain: _Chain) -> None:
    """Point every entry but the first at the one before it (again after ids were redrawn)."""
    prepared = chain.prepared
    prepared[0]["parentId"] = chain.parent_id
    for i in range(1, len(prepared)):
        prepared[i]["parentId"] = prepared[i - 1]["id"]
