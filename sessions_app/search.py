"""Search message text across the sessions a user can read, with each hit located in its session's tree.

PostgreSQL matches with full-text search (``websearch_to_tsquery`` over the stored ``search_vector``
under a GIN index): words, "quoted phrases", ``or`` and ``-word``. The embedded SQLite mode falls back to
a case-insensitive substring match of every query word. Hits carry the entry id, so a page can open the
tree around them (``tree?around=<id>``).

Cost stays bounded for words and most phrases: each session is probed for its newest few hits only, so a
frequent word does not read every entry that has it. A phrase of frequent words that never stand together
has to check every entry holding them all; a statement timeout bounds that case and the answer says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import OperationalError, connection, transaction

from .domain.search import query_terms, snippet
from .models import Entry

__all__ = ["Hit", "SearchResult", "matching_sessions", "search_entries"]

HITS_PER_SESSION = 5  # hits returned per session (newest first); more are flagged, not counted
STATEMENT_TIMEOUT_MS = 3000
CONFIG = "simple"  # no stemming or stop words: code, paths and names match as typed
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
    """Hits grouped by session (sessions in the caller's order), and which sessions have more hits."""

    hits: dict[int, list[Hit]]
    more: set[int]
    incomplete: bool = False  # the search gave up at its time limit

    @property
    def session_ids(self) -> list[int]:
        return list(self.hits)


def search_entries(
    session_ids: Sequence[int], text: str, *, per_session: int = HITS_PER_SESSION
) -> SearchResult:
    """Return the newest entries whose message text matches ``text``, per session of ``session_ids``."""
    terms = query_terms(text)
    if not terms or not session_ids:
        return SearchResult({}, set())
    grouped: dict[int, list[tuple[int, str | None, str, str, str]]] = {}
    incomplete = False
    try:
        rows = _matching_rows(list(session_ids), text, terms, per_session + 1)
    except OperationalError:  # the statement timeout: a phrase of frequent words that never meet
        rows, incomplete = [], True
    for session_id, seq, entry_id, kind, role, excerpt in rows:
        grouped.setdefault(session_id, []).append((seq, entry_id, kind, role, excerpt))
    ordered: dict[int, list[Hit]] = {}
    more: set[int] = set()
    for session_id in session_ids:
        found = grouped.get(session_id)
        if not found:
            continue
        found.sort(reverse=True)
        if len(found) > per_session:
            more.add(session_id)
        ordered[session_id] = [
            Hit(session_id, seq, entry_id, kind, role, snippet(excerpt, terms))
            for seq, entry_id, kind, role, excerpt in found[:per_session]
        ]
    return SearchResult(ordered, more, incomplete)


def matching_sessions(session_ids: Sequence[int], text: str) -> list[int]:
    """Return which of ``session_ids`` have at least one entry whose message text matches ``text``."""
    return search_entries(session_ids, text, per_session=0).session_ids


def _matching_rows(session_ids: list[int], text: str, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
    table = Entry._meta.db_table
    excerpt = "substr(search_text, {}(1, {}(lower(search_text), %s) - 80), %s)"
    if connection.vendor != "postgresql":
        where, params = _like_clause(terms)
        marks = ", ".join(["%s"] * len(session_ids))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT session_id, seq, entry_id, type, role, {excerpt.format('max', 'instr')} "
                f"FROM {table} WHERE {where} AND session_id IN ({marks}) ORDER BY seq DESC",
                [terms[0], _EXCERPT, *params, *session_ids],
            )
            counts: dict[int, int] = {}
            kept = []
            for row in cursor.fetchall():
                counts[row[0]] = counts.get(row[0], 0) + 1
                if counts[row[0]] <= limit:
                    kept.append(row)
            return kept
    # One bounded probe per session, newest first. The planner picks per query: the GIN index for rare
    # words, a backward scan of the session's entries that stops after ``limit`` hits for frequent ones.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}")
        cursor.execute(
            f"SELECT s.id, h.* FROM unnest(%s::bigint[]) AS s(id) CROSS JOIN LATERAL ("
            f"SELECT seq, entry_id, type, role, {excerpt.format('greatest', 'strpos')} FROM {table} e "
            "WHERE e.session_id = s.id AND e.search_vector @@ websearch_to_tsquery(%s, %s) "
            "ORDER BY e.seq DESC LIMIT %s) AS h",
            [session_ids, terms[0], _EXCERPT, CONFIG, text, limit],
        )
        return cursor.fetchall()


def _like_clause(terms: list[str]) -> tuple[str, list[str]]:
    """Every word as a case-insensitive substring (SQLite's LIKE ignores ASCII case)."""
    escaped = [t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for t in terms]
    where = " AND ".join(["search_text LIKE %s ESCAPE '\\'"] * len(terms))
    return f"search_text <> '' AND {where}", [f"%{t}%" for t in escaped]
