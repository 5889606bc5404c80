"""The entry store's running sums: written with every entry, backfilled once for entries stored before.

The sums themselves are the domain's (``domain.context_sums``); this module reads the parents' sums and
writes the new rows, for each of the store's ways in: rows placed by the portable backend, a whole
session (import, fork, clone), and the PostgreSQL chain statement, whose sums go in by one more
statement in the same pipeline (``CHAIN_SQL``), so an append still takes one round trip.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.db import connection, transaction

from pitree import context_sums
from pitree.context_sums import OwnSums, PathSums
from pitree.entries import Entry as DomainEntry
from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from sessions_app.models import ChatSession, EntrySums

__all__ = [
    "CHAIN_SQL",
    "backfill_session",
    "backfill_sessions",
    "chain_params",
    "record_rows",
    "record_tree",
]

_COLUMNS = ("session_id", "seq", "tokens", "all_tokens", "messages", "usage_seq")
_TABLE = EntrySums._meta.db_table


def _read(session_id: int, seqs: Iterable[int]) -> dict[int, PathSums]:
    wanted = set(seqs)
    if not wanted:
        return {}
    rows = EntrySums.objects.filter(session_id=session_id, seq__in=wanted).values_list(
        "seq", "tokens", "all_tokens", "messages", "usage_seq"
    )
    return {seq: PathSums(t, a, m, u) for seq, t, a, m, u in rows}


def _write(rows: Iterable[tuple[Any, ...]]) -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {_TABLE} ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join(["%s"] * len(_COLUMNS))
        cursor.executemany(f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({marks})", list(rows))


def _row(session_id: int, seq: int, sums: PathSums) -> tuple[Any, ...]:
    return (session_id, seq, sums.tokens, sums.all_tokens, sums.messages, sums.usage_seq)


def record_rows(
    session: ChatSession, entries: Sequence[DomainEntry], placed: Sequence[tuple[int, int | None, int | None]]
) -> None:
    """Write the sums of entries just placed: (seq, parent seq, depth) per entry, parents first.

    An entry whose stored parent has no sums (stored before they existed) gets none either: the reader
    projects such paths in full until the backfill reaches them.
    """
    batch = {seq for seq, _, depth in placed if depth is not None}
    known = _read(session.pk, {p for _, p, d in placed if d is not None and p is not None and p not in batch})
    out: list[tuple[Any, ...]] = []
    for entry, (seq, parent, depth) in zip(entries, placed, strict=True):
        if depth is None:
            continue
        above = context_sums.ROOT if parent is None else known.get(parent)
        if above is None:
            continue
        mine = context_sums.fold(above, context_sums.own_sums(entry), seq)
        known[seq] = mine
        out.append(_row(session.pk, seq, mine))
    if out:
        _write(out)


def record_tree(
    session: ChatSession,
    entries: Sequence[DomainEntry],
    parents: Sequence[int],
    own: Sequence[OwnSums] | None = None,
) -> None:
    """Write the sums of a whole session stored at once (seq = position; ``parents`` by position)."""
    sums = context_sums.tree_sums(entries, parents, own)
    _write(_row(session.pk, seq, s) for seq, s in enumerate(sums) if s is not None)


# The chain statement's sums, run after it in the same pipeline. The chain's first row is found where the
# append put it (seq and id, so a refused append that left an older row there adds nothing); its parent's
# sums plus the domain's offsets give every row's. No parent sums (not backfilled yet): no rows.
CHAIN_SQL = (
    f"WITH f AS (SELECT e.seq AS first,e.parent_seq FROM sessions_app_chatsession c "
    f"JOIN sessions_app_entry e ON e.session_id=c.id AND e.seq=c.next_seq-%(n)s AND e.entry_id=%(sum_first)s "
    f"WHERE c.id=%(pk)s),"
    f"p AS (SELECT f.first,coalesce(s.tokens,0) AS tokens,coalesce(s.all_tokens,0) AS all_tokens,"
    f"coalesce(s.messages,0) AS messages,s.usage_seq FROM f LEFT JOIN {_TABLE} s "
    f"ON s.session_id=%(pk)s AND s.seq=f.parent_seq WHERE f.parent_seq IS NULL OR s.seq IS NOT NULL) "
    f"INSERT INTO {_TABLE} ({','.join(_COLUMNS)}) "
    f"SELECT %(pk)s,p.first+b.at,p.tokens+b.tokens,p.all_tokens+b.all_tokens,p.messages+b.messages,"
    f"coalesce(p.first+b.usage,p.usage_seq) FROM p,unnest(%(at)s::int[],%(sum_tokens)s::bigint[],"
    f"%(sum_all)s::bigint[],%(sum_messages)s::int[],%(sum_usage)s::int[]) "
    f"AS b(at,tokens,all_tokens,messages,usage) ON CONFLICT DO NOTHING"
)


def chain_params(entries: Sequence[DomainEntry]) -> dict[str, Any]:
    """Return ``CHAIN_SQL``'s parameters: each entry's sums relative to the chain's parent."""
    relative = context_sums.chain_sums(entries, context_sums.ROOT, 0)
    return {
        "sum_first": entries[0].id,
        "sum_tokens": [s.tokens for s in relative],
        "sum_all": [s.all_tokens for s in relative],
        "sum_messages": [s.messages for s in relative],
        "sum_usage": [s.usage_seq for s in relative],
    }


# -- entries stored before the sums existed ------------------------------------------------------------


def backfill_session(session_id: int, *, chunk: int = 5000, missing_only: bool = False) -> int:
    """Compute and write the sums a session lacks; return how many rows were written.

    By default a session holding any sums is taken as done (the migration's case: each session is
    written in one transaction, so a session is either done or untouched). ``missing_only`` fills in
    the entries without sums among others that have them: those an earlier release appended while the
    upgrade ran, which wrote none, nor did the new release below them (no parent sums). Rows are read
    in depth order, so every parent's sums are known before its children's; only the sums (four
    numbers per entry) stay in memory. The session row is locked meanwhile, as an append locks it, so
    no entry lands in between and two runs never write one row twice.
    """
    entry_table = "sessions_app_entry"
    # Plain SQL throughout: the migration that backfills runs this against the tables as they are then.
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM sessions_app_chatsession WHERE id = %s FOR UPDATE", [session_id])
        known: dict[int, PathSums] = {}
        if missing_only:
            cursor.execute(
                f"SELECT seq, tokens, all_tokens, messages, usage_seq FROM {_TABLE} WHERE session_id = %s",
                [session_id],
            )
            known = {seq: PathSums(t, a, m, u) for seq, t, a, m, u in cursor.fetchall()}
        else:
            cursor.execute(f"SELECT 1 FROM {_TABLE} WHERE session_id = %s LIMIT 1", [session_id])
            if cursor.fetchone() is not None:
                return 0
        stored = set(known)

        def rows() -> Iterator[tuple[Any, ...]]:
            with connection.cursor() as reader:
                reader.execute(
                    f"SELECT seq, parent_seq, raw FROM {entry_table} "
                    "WHERE session_id = %s AND depth IS NOT NULL ORDER BY depth, seq",
                    [session_id],
                )
                while batch := reader.fetchmany(chunk):
                    for seq, parent, raw in batch:
                        if seq in stored:
                            continue
                        above = context_sums.ROOT if parent is None else known.get(parent)
                        if above is None:
                            continue
                        entry = entry_from_value(seq, parse_json(raw))
                        mine = context_sums.fold(above, context_sums.own_sums(entry), seq)
                        known[seq] = mine
                        yield _row(session_id, seq, mine)

        out = list(rows())
        for start in range(0, len(out), chunk):
            _write(out[start : start + chunk])
        return len(out)


def backfill_sessions(session_ids: Iterable[int]) -> int:
    """Backfill every listed session that has no sums; return how many rows were written."""
    return sum(backfill_session(pk) for pk in session_ids)
