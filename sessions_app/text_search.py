"""Search message text: across the sessions a user can read, and every hit of one session in tree order.

PostgreSQL matches with full-text search (``websearch_to_tsquery``): words, "quoted phrases", ``or`` and
``-word``, over narrow rows (``EntrySearch``: session, seq, tree position, vector) under a GIN index that
starts with the session. The embedded SQLite mode reads the same syntax (``domain.search.parse_query``)
and matches each word, or each phrase's words one character apart, as a case-insensitive substring.
Hits carry the entry id, so a page can open the tree around them (``tree?around=<id>``).

Across sessions, each session is probed for its newest few hits only, so a frequent word does not read
every entry that has it; the hits beyond them are counted up to ``COUNT_CAP`` within a small time budget
(past it the answer only says there are more). Snippets are cut for the shown hits alone. Within one
session every hit is listed, in the tree's drawing order, so next and previous reach each one; the list
is cached per session state, so paging through it costs one query.

A phrase of frequent words that never stand together has to check every entry holding them all; a
statement timeout bounds that case and the answer says so.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import OperationalError, connection, transaction

from pitree.searchable import parse_query, query_terms, snippet
from sessions_app.models import ChatSession, Entry, EntrySearch
from sessions_app.state_cache import cached, state_key
from sessions_app.tree_overview import tree_order

__all__ = [
    "COUNT_CAP",
    "HITS_PER_SESSION",
    "Hit",
    "HitList",
    "SearchResult",
    "SessionHit",
    "entry_details",
    "extra_hits",
    "first_matching",
    "hit_list_key",
    "hit_page",
    "matching_sessions",
    "register_extra_hits",
    "search_entries",
    "session_hits",
]

HITS_PER_SESSION = 5  # hits returned per session (newest first)
COUNT_CAP = 100  # hits counted per session across sessions; beyond it the count reads "more than 100"
COUNT_BUDGET_MS = 30  # what counting may add to a cross-session search; sessions past it get no count
STATEMENT_TIMEOUT_MS = 3000

# Other apps' hits in one session (comments, for one), listed beside the entry hits under their own key.
# Each source takes the viewer's grant and the query text and returns JSON-ready hits in its scope.
_EXTRA_HITS: dict[str, Callable[[Any, str], list[dict[str, Any]]]] = {}


def register_extra_hits(key: str, source: Callable[[Any, str], list[dict[str, Any]]]) -> None:
    """Add a source of hits to every session search's answer, under ``key`` (apps call it when ready)."""
    _EXTRA_HITS[key] = source


def extra_hits(grant: Any, text: str) -> dict[str, list[dict[str, Any]]]:
    """Return every registered source's hits for this viewer, by key."""
    return {key: source(grant, text) for key, source in _EXTRA_HITS.items()}


CONFIG = "simple"  # no stemming or stop words: code, paths and names match as typed
HIT_LIST_VERSION = 1
HIT_LIST_TTL_SECONDS = 600
_EXCERPT = 240  # characters read around the first match, for the snippet


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching entry: where it is (session, append seq, entry id) and a short excerpt."""

    session_id: int
    seq: int
    entry_id: str | None
    type: str
    role: str
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits grouped by session (sessions in the caller's order), and how many each session has.

    ``counts`` holds the number of hits of each counted session, at most ``COUNT_CAP``; ``capped`` the
    sessions with more than that. A session in ``more`` but without a count was not counted in time.
    """

    hits: dict[int, list[Hit]]
    more: set[int]
    counts: dict[int, int] = field(default_factory=dict)
    capped: set[int] = field(default_factory=set)
    incomplete: bool = False  # the search gave up at its time limit

    @property
    def session_ids(self) -> list[int]:
        return list(self.hits)


def search_entries(
    session_ids: Sequence[int], text: str, *, per_session: int = HITS_PER_SESSION, count: bool = True
) -> SearchResult:
    """Return the newest entries whose message text matches ``text``, per session of ``session_ids``,
    with each session's number of hits (``count=False``: only whether there are more than shown)."""
    terms = query_terms(text)
    if not terms or not session_ids:
        return SearchResult({}, set())
    ids = list(session_ids)
    if connection.vendor != "postgresql":
        return _search_like(ids, text, per_session)
    try:
        newest = _newest_seqs(ids, text, per_session + 1)
    except OperationalError:  # the statement timeout: a phrase of frequent words that never meet
        return SearchResult({}, set(), incomplete=True)
    counts = {pk: len(seqs) for pk, seqs in newest.items() if len(seqs) <= per_session}
    capped: set[int] = set()
    busy = [pk for pk in ids if len(newest.get(pk, ())) > per_session]
    if count and busy:
        for pk, found in _capped_counts(busy, text).items():
            counts[pk] = min(found, COUNT_CAP)
            if found > COUNT_CAP:
                capped.add(pk)
    shown = [(pk, seq) for pk in ids for seq in newest.get(pk, [])[:per_session]]
    details = entry_details(shown, terms)
    hits: dict[int, list[Hit]] = {}
    for pk in ids:
        if pk in newest:
            hits[pk] = [details[(pk, seq)] for seq in newest[pk][:per_session] if (pk, seq) in details]
    return SearchResult(hits, set(busy), counts, capped)


def matching_sessions(session_ids: Sequence[int], text: str) -> list[int]:
    """Return which of ``session_ids`` have at least one entry whose message text matches ``text``."""
    return first_matching(session_ids, text)[0]


def first_matching(
    session_ids: Sequence[int], text: str, *, enough: int | None = None
) -> tuple[list[int], bool]:
    """Return the sessions of ``session_ids`` with a hit, in the given order (with ``enough``, only the
    first ``enough`` of them), and whether the search stopped at its time limit."""
    if not query_terms(text) or not session_ids:
        return [], False
    ids = list(session_ids)
    if connection.vendor != "postgresql":
        return _search_like(ids, text, 0).session_ids[:enough], False
    try:
        return _sessions_with_hits(ids, text, enough), False
    except OperationalError:  # the statement timeout: a phrase of frequent words that never meet
        return [], True


def entry_details(positions: Sequence[tuple[int, int]], terms: list[str]) -> dict[tuple[int, int], Hit]:
    """Return the hit at each (session, seq), its snippet cut around the first query word."""
    if not positions:
        return {}
    table = Entry._meta.db_table
    first = terms[0] if terms else ""
    if connection.vendor == "postgresql":
        sql = (
            "SELECT e.session_id, e.seq, e.entry_id, e.type, e.role, "
            "substr(e.search_text, greatest(1, strpos(lower(e.search_text), %s) - 80), %s) "
            f"FROM {table} e JOIN unnest(%s::bigint[], %s::int[]) AS p(sid, seq) "
            "ON e.session_id = p.sid AND e.seq = p.seq"
        )
        params: list[Any] = [first, _EXCERPT, [p[0] for p in positions], [p[1] for p in positions]]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    else:
        rows = []
        for start in range(0, len(positions), 200):
            chunk = positions[start : start + 200]
            where = " OR ".join(["(session_id = %s AND seq = %s)"] * len(chunk))
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT session_id, seq, entry_id, type, role, "
                    f"substr(search_text, max(1, instr(lower(search_text), %s) - 80), %s) FROM {table} "
                    f"WHERE {where}",
                    [first, _EXCERPT, *(v for p in chunk for v in p)],
                )
                rows.extend(cursor.fetchall())
    return {
        (pk, seq): Hit(pk, seq, entry_id, kind, role, snippet(excerpt or "", terms))
        for pk, seq, entry_id, kind, role, excerpt in rows
    }


@dataclass(frozen=True, slots=True)
class HitList:
    """Every hit of one session, as append sequences in the tree's drawing order."""

    seqs: list[int]
    incomplete: bool = False


@dataclass(frozen=True, slots=True)
class SessionHit:
    """One hit of a session's list: its position among all hits and where it is in the tree."""

    index: int
    seq: int
    entry_id: str
    type: str
    role: str


def hit_page(session: ChatSession, seqs: Sequence[int], offset: int, limit: int) -> list[SessionHit]:
    """Return hits ``offset`` … ``offset + limit - 1`` of a session's hit list, with their entry ids."""
    page = list(seqs[offset : offset + limit])
    if not page:
        return []
    marks = ", ".join(["%s"] * len(page))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, entry_id, type, role FROM {Entry._meta.db_table} "
            f"WHERE session_id = %s AND seq IN ({marks}) AND entry_id IS NOT NULL",
            [session.pk, *page],
        )
        rows = {seq: (entry_id, kind, role) for seq, entry_id, kind, role in cursor.fetchall()}
    return [SessionHit(offset + i, seq, *rows[seq]) for i, seq in enumerate(page) if seq in rows]


def hit_list_key(session: ChatSession, text: str, *, by_time: bool = True) -> str:
    """Return the cache key of a session's hit list: one per session state, query and tree order."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return state_key(f"hits:{HIT_LIST_VERSION}", session, int(by_time), digest)


def session_hits(session: ChatSession, text: str, *, by_time: bool = True) -> HitList:
    """Return every entry of ``session`` whose message text matches ``text``, in tree order (the
    overview's, or with ``by_time=False`` the append-ordered listing restricted grants see).

    Entries are append-only, so the session's next seq names its state: the list is cached under it and
    an append simply asks for a new key. Scope is not applied here (``link_scope.scoped_hits`` does).
    """
    if not query_terms(text):
        return HitList([])

    def build() -> bytes:
        pieces = _tree_pieces(session, by_time)
        return array("i", _ordered_hits(session, text, pieces)).tobytes()

    try:
        stored = cached(hit_list_key(session, text, by_time=by_time), build, HIT_LIST_TTL_SECONDS)
    except OperationalError:  # the statement timeout: a phrase of frequent words that never meet
        return HitList([], incomplete=True)
    return HitList(array("i", stored).tolist())


def _tree_pieces(session: ChatSession, by_time: bool) -> list[tuple[int, int, int, int]]:
    """Return the pieces of the session's tree in drawing order (``TreeOrder.pieces``), cached per
    session state like the hit lists that use them."""
    key = state_key(f"tree-order:{HIT_LIST_VERSION}", session, int(by_time))
    return list(cached(key, lambda: tree_order(session, by_time=by_time).pieces(), HIT_LIST_TTL_SECONDS))


# -- PostgreSQL ---------------------------------------------------------------------------------------

_SEARCH_TABLE = EntrySearch._meta.db_table
# Session ids are bigint: an int literal would not match the btree_gin operator class of the index.
_MATCH = "x.vector @@ websearch_to_tsquery(%s, %s)"


# Sessions probed one by one, in order, first to tell a common query from a rare one, then per
# statement; and the rows past which a query is too common for one scan of the search index over all
# sessions at once.
FIRST_PROBE = 64
PROBE_CHUNK = 200
RARE_ROWS = 2000


def _sessions_with_hits(session_ids: list[int], text: str, enough: int | None) -> list[int]:
    """Return the sessions of ``session_ids`` with a hit, in their order (the first ``enough``).

    A probe per session ("has it a hit?") stops at the session's first hit, but reads every row of a
    session without one: for a rare word among 2,001 small sessions that was every row stored (0.2–0.9 s).
    So the first few sessions are probed; when most of them match, the word is common and probing goes on
    (and stops with ``enough``); when few do, one scan of the search index finds the rare query's few
    rows in all sessions at once.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        _quick_statement(cursor)

        def probe(chunk: list[int]) -> list[int]:
            # Each session's newest hit, as _newest_seqs: an EXISTS here became one hash join over every
            # session's hits of two common words (0.4 s for 200 sessions).
            cursor.execute(
                "SELECT s.id FROM unnest(%s::bigint[]) WITH ORDINALITY AS s(id, n) CROSS JOIN LATERAL ("
                f"SELECT x.seq FROM {_SEARCH_TABLE} x WHERE x.session_id = s.id AND {_MATCH} "
                "ORDER BY x.seq DESC LIMIT 1) AS h ORDER BY s.n",
                [chunk, CONFIG, text],
            )
            return [pk for (pk,) in cursor.fetchall()]

        first = session_ids[:FIRST_PROBE]
        matched = probe(first)
        rest = session_ids[FIRST_PROBE:]
        if not rest or (enough is not None and len(matched) >= enough):
            return matched[:enough]
        if 2 * len(matched) < len(first):
            cursor.execute(
                f"SELECT x.session_id FROM {_SEARCH_TABLE} x WHERE x.session_id = ANY(%s::bigint[]) "
                f"AND {_MATCH} LIMIT %s",
                [rest, CONFIG, text, RARE_ROWS],
            )
            rows = cursor.fetchall()
            if len(rows) < RARE_ROWS:
                found = {pk for (pk,) in rows}
                return (matched + [pk for pk in rest if pk in found])[:enough]
        for start in range(0, len(rest), PROBE_CHUNK):
            matched.extend(probe(rest[start : start + PROBE_CHUNK]))
            if enough is not None and len(matched) >= enough:
                break
        return matched[:enough]


def _quick_statement(cursor: Any, timeout_ms: int = STATEMENT_TIMEOUT_MS) -> None:
    """Bound the search's statements, and keep PostgreSQL from compiling them (JIT): their cost estimates
    over many sessions pass ``jit_above_cost``, and compiling took longer than running them."""
    cursor.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('jit', 'off', true)", [str(timeout_ms)]
    )


def _newest_seqs(session_ids: list[int], text: str, limit: int) -> dict[int, list[int]]:
    """Return the newest ``limit`` hit seqs of each session that has any, newest first.

    One bounded probe per session. The planner picks per query: the GIN index for rare words, a
    backward scan of the session's rows that stops after ``limit`` hits for frequent ones.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        _quick_statement(cursor)
        cursor.execute(
            f"SELECT s.id, h.seq FROM unnest(%s::bigint[]) AS s(id) CROSS JOIN LATERAL ("
            f"SELECT x.seq FROM {_SEARCH_TABLE} x WHERE x.session_id = s.id AND {_MATCH} "
            "ORDER BY x.seq DESC LIMIT %s) AS h",
            [session_ids, CONFIG, text, limit],
        )
        rows = cursor.fetchall()
    found: dict[int, list[int]] = {}
    for pk, seq in rows:
        found.setdefault(pk, []).append(seq)
    for seqs in found.values():
        seqs.sort(reverse=True)
    return found


def _capped_counts(session_ids: list[int], text: str) -> dict[int, int]:
    """Return the number of hits of each session, counted up to COUNT_CAP + 1, in the given order until
    the counting budget is spent (a phrase of frequent words checks many candidates per hit): sessions
    past it are left out. One statement: each row checks the clock before counting its session."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # The budget is checked between sessions; the timeout bounds one session that runs long.
            _quick_statement(cursor, COUNT_BUDGET_MS * 4)
            cursor.execute(
                "SELECT s.id, CASE WHEN clock_timestamp() < statement_timestamp() "
                "+ make_interval(secs => %s) THEN (SELECT count(*) FROM ("
                f"SELECT 1 FROM {_SEARCH_TABLE} x WHERE x.session_id = s.id AND {_MATCH} LIMIT %s) AS c) END "
                "FROM unnest(%s::bigint[]) AS s(id)",
                [COUNT_BUDGET_MS / 1000, CONFIG, text, COUNT_CAP + 1, session_ids],
            )
            return {pk: found for pk, found in cursor.fetchall() if found is not None}
    except OperationalError:
        return {}


def _ordered_hits(session: ChatSession, text: str, pieces: list[tuple[int, int, int, int]]) -> list[int]:
    """Return the seqs of every hit of the session that is in its tree, ordered by (piece rank, depth)."""
    if not pieces:
        return []
    if connection.vendor != "postgresql":
        where, params = _like_clause(text)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT seq, segment, depth FROM {Entry._meta.db_table} "
                f"WHERE session_id = %s AND segment IS NOT NULL AND {where}",
                [session.pk, *params],
            )
            positions = cursor.fetchall()
        by_segment: dict[int, list[tuple[int, int, int]]] = {}
        for segment, low, high, rank in pieces:
            by_segment.setdefault(segment, []).append((low, high, rank))
        keyed = [
            (rank, depth, seq)
            for seq, segment, depth in positions
            for low, high, rank in by_segment.get(segment, ())
            if low <= depth <= high
        ]
        return [seq for _, _, seq in sorted(keyed)]
    # The database orders them: each hit joins the piece of the tree it is drawn in.
    segments, lows, highs, ranks = (list(column) for column in zip(*pieces, strict=True))
    with transaction.atomic(), connection.cursor() as cursor:
        _quick_statement(cursor)
        cursor.execute(
            f"SELECT x.seq FROM {_SEARCH_TABLE} x "
            "JOIN unnest(%s::int[], %s::int[], %s::int[], %s::int[]) AS p(seg, lo, hi, rank) "
            "ON x.segment = p.seg AND x.depth BETWEEN p.lo AND p.hi "
            f"WHERE x.session_id = %s::bigint AND {_MATCH} ORDER BY p.rank, x.depth",
            [segments, lows, highs, ranks, session.pk, CONFIG, text],
        )
        return [seq for (seq,) in cursor.fetchall()]


# -- SQLite (the embedded mode) -------------------------------------------------------------------------


def _search_like(session_ids: list[int], text: str, per_session: int) -> SearchResult:
    terms = query_terms(text)
    where, params = _like_clause(text)
    marks = ", ".join(["%s"] * len(session_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT session_id, seq FROM {Entry._meta.db_table} "
            f"WHERE {where} AND session_id IN ({marks}) ORDER BY seq DESC",
            [*params, *session_ids],
        )
        rows = cursor.fetchall()
    found: dict[int, list[int]] = {}
    for pk, seq in rows:
        found.setdefault(pk, []).append(seq)
    shown = [(pk, seq) for pk in session_ids for seq in found.get(pk, [])[:per_session]]
    details = entry_details(shown, terms)
    hits = {
        pk: [details[(pk, seq)] for seq in found[pk][:per_session] if (pk, seq) in details]
        for pk in session_ids
        if pk in found
    }
    counts = {pk: min(len(seqs), COUNT_CAP) for pk, seqs in found.items()}
    capped = {pk for pk, seqs in found.items() if len(seqs) > COUNT_CAP}
    more = {pk for pk, seqs in found.items() if len(seqs) > per_session}
    return SearchResult(hits, more, counts, capped)


def _like_clause(text: str) -> tuple[str, list[str]]:
    """The query as LIKE conditions: groups joined by OR, each word or phrase (its words one character
    apart) a substring that must, or with ``-`` must not, occur (SQLite's LIKE ignores ASCII case)."""
    groups: list[str] = []
    params: list[str] = []
    for group in parse_query(text):
        conditions = []
        for match in group:
            conditions.append(f"search_text {'NOT ' if match.negated else ''}LIKE %s ESCAPE '\\'")
            escaped = (w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for w in match.words)
            params.append(f"%{'_'.join(escaped)}%")
        groups.append(f"({' AND '.join(conditions)})")
    if not groups:  # only operators: nothing to look for, as websearch_to_tsquery's empty query
        return "1 = 0", []
    return f"search_text <> '' AND ({' OR '.join(groups)})", params
