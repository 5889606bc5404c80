"""Read side: paths, projections and entry listings from the database, without reading whole histories.

A path is read segment by segment: the small segment table gives, for each segment on the path, the
depth range the path uses, and one indexed range scan per segment returns exactly the path rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from pitree.entries import Entry as DomainEntry
from pitree.projection import Projection, project, settings_from_anchors
from pitree.tokens import TokenEstimate, estimate_projected_context_tokens
from pitree.tree import SessionTree
from sessions_app.fast_get import ByFields
from sessions_app.models import ChatSession, Entry, Segment, SessionShare, first_prompt

__all__ = [
    "ContextView",
    "EntryNotFound",
    "context_for_leaf",
    "entries_by_id",
    "entries_since",
    "find_entry",
    "join_entries",
    "latest_entry",
    "load_tree",
    "path_ranges",
    "path_rows",
    "path_seqs",
    "segment_table",
]


class EntryNotFound(LookupError):
    """No entry with that id in this session."""


def find_entry(session: ChatSession, entry_id: str) -> Entry:
    """Return the row Pi's id index resolves ``entry_id`` to (the latest duplicate)."""
    row = latest_entry(session, entry_id)
    if row is None:
        raise EntryNotFound(f"Entry {entry_id} not found")
    return row


def latest_entry(session: ChatSession, entry_id: str) -> Entry | None:
    """Return the newest row with ``entry_id``, or None."""
    # The newest duplicate chosen here: with ORDER BY seq, SQLite without statistics walked the whole
    # session in seq order instead of probing the id index (a third of a second at 100k entries).
    rows = _entries_by_id.rows(session.pk, entry_id, using=session._state.db or "default")
    return max(rows, key=lambda row: row.seq) if rows else None


# Every read of a node asks this first (the access check of a path, a context, a comment, a cost).
_entries_by_id: ByFields[Entry] = ByFields(Entry, lambda: Entry.objects.all(), "session_id", "entry_id")


def entries_by_id(session: ChatSession, entry_ids: Sequence[str]) -> list[Entry]:
    """Return the rows ``entry_ids`` resolve to as ``find_entry`` does (the latest duplicate), in append
    order; ids that are not found are left out."""
    latest: dict[str, Entry] = {}
    rows = Entry.objects.filter(session=session, entry_id__in=set(entry_ids))
    for row in sorted(rows, key=lambda row: row.seq):  # not ORDER BY: see find_entry
        if row.entry_id is not None:  # always: the filter matched it
            latest[row.entry_id] = row
    return sorted(latest.values(), key=lambda row: row.seq)


# segment → (parent segment, start depth, seq at the start depth when the segment's seqs are consecutive)
SegmentTable = dict[int, tuple[int | None, int, int | None]]


def segment_table(session: ChatSession) -> SegmentTable:
    """Return the session's segment table (one row per branch point: small even for huge trees)."""
    rows = Segment.objects.filter(session=session).values_list(
        "index", "parent_index", "start_depth", "first_seq", "tip_seq", "tip_depth"
    )
    return {
        index: (parent, start, first if first is not None and tip - first == tip_depth - start else None)
        for index, parent, start, first, tip, tip_depth in rows
    }


def path_ranges(
    session: ChatSession,
    leaf: Entry,
    *,
    min_depth: int = 0,
    max_depth: int | None = None,
    table: SegmentTable | None = None,
) -> list[tuple[int, int, int]]:
    """Return (segment, low depth, high depth) for the path root→leaf, deepest segment first."""
    if leaf.segment is None or leaf.depth is None:
        return []
    if table is None:
        table = segment_table(session)
    ranges: list[tuple[int, int, int]] = []
    segment: int | None = leaf.segment
    high = leaf.depth
    while segment is not None and max_depth is not None and table[segment][1] > max_depth:
        high = table[segment][1] - 1  # the window ends above this segment: start from its parent
        segment = table[segment][0]
    if max_depth is not None:
        high = min(high, max_depth)
    while segment is not None and high >= min_depth:
        parent, start, _ = table[segment]
        ranges.append((segment, max(start, min_depth), high))
        high = start - 1
        segment = parent
    return ranges


def path_rows(
    session: ChatSession,
    leaf: Entry,
    *,
    min_depth: int = 0,
    max_depth: int | None = None,
    fields: Sequence[str] = (),
    table: SegmentTable | None = None,
    roles: Sequence[str] = (),
) -> list[Any]:
    """Return the path rows root→leaf with min_depth ≤ depth ≤ max_depth (instances, or tuples of fields);
    with ``roles``, only the messages of those roles."""
    if table is None:
        table = segment_table(session)
    ranges = path_ranges(session, leaf, min_depth=min_depth, max_depth=max_depth, table=table)
    if not ranges:
        return []
    if len(ranges) > 8:
        seqs = _seqs_of_ranges(session, ranges, table)
        if connection.vendor == "postgresql":
            # One array parameter: an IN list of a long path's seqs cost more to build than to run.
            query = Entry.objects.filter(
                RawSQL(
                    f'"{Entry._meta.db_table}"."seq" = ANY(%s::int[])', (seqs,), output_field=BooleanField()
                ),
                session=session,
            )
        else:
            query = Entry.objects.filter(session=session, seq__in=seqs)
    else:
        cond = Q()
        for segment, low, high in ranges:
            cond |= Q(segment=segment, depth__gte=low, depth__lte=high)
        query = Entry.objects.filter(cond, session=session)
    if roles:
        query = query.filter(role__in=roles)
    query = query.order_by("depth")
    return list(query.values_list(*fields)) if fields else list(query)


def join_entries(
    session: ChatSession,
    rows: Sequence[tuple[int, ...]],
    names: str,
    *,
    on: str,
    select: str,
    where: str = "",
) -> list[tuple[Any, ...]]:
    """Return ``SELECT select`` over the session's entries ``e`` joined to a list of integer tuples
    ``r(names)`` ``ON on`` (and ``where``): each tuple is one index probe or range scan.

    PostgreSQL takes the tuples as arrays (``unnest``), other databases as a ``VALUES`` list, in chunks
    under SQLite's parameter limit: an aggregate gives a row per chunk. An ORM ``OR`` of as many terms
    cost seconds at 100k entries on SQLite, in building it and in a plan that scanned the session."""
    if not rows:
        return []
    columns = names.split(", ")
    table = Entry._meta.db_table
    tail = f"WHERE e.session_id = %s AND ({on})" + (f" AND {where}" if where else "")
    if connection.vendor == "postgresql":
        arrays = ", ".join(["%s::int[]"] * len(columns))
        sql = f"SELECT {select} FROM {table} e JOIN unnest({arrays}) AS r({names}) ON true {tail}"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*(list(column) for column in zip(*rows, strict=True)), session.pk])
            return [tuple(found) for found in cursor.fetchall()]
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    per_query = _PARAMETERS_PER_QUERY // len(columns)
    out: list[tuple[Any, ...]] = []
    for start in range(0, len(rows), per_query):
        chunk = rows[start : start + per_query]
        sql = (
            f"WITH r({names}) AS (VALUES {', '.join([one] * len(chunk))}) "
            f"SELECT {select} FROM r CROSS JOIN {table} e {tail}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*(value for row in chunk for value in row), session.pk])
            out.extend(tuple(found) for found in cursor.fetchall())
    return out


_PARAMETERS_PER_QUERY = 9000  # well under SQLite's limit of 32766
IN_RANGE = "e.segment = r.seg AND e.depth BETWEEN r.lo AND r.hi"


def path_seqs(session: ChatSession, leaf: Entry) -> list[int]:
    """Return the append sequences of the whole path root→leaf."""
    table = segment_table(session)
    return _seqs_of_ranges(session, path_ranges(session, leaf, table=table), table)


def _seqs_of_ranges(
    session: ChatSession, ranges: list[tuple[int, int, int]], table: SegmentTable
) -> list[int]:
    """Return the seqs of path ranges, root first: consecutive segments from the table, others from rows."""
    slow = [r for r in ranges if table[r[0]][2] is None]
    # (depth, seq) pairs only: joining the range list to the payload column makes a poor plan.
    pairs = join_entries(session, slow, "seg, lo, hi", on=IN_RANGE, select="e.depth, e.seq")
    by_depth: dict[int, int] = {depth: seq for depth, seq in pairs}
    out: list[int] = []
    for segment, low, high in reversed(ranges):
        _, start, first = table[segment]
        if first is not None:
            out.extend(range(first + low - start, first + high - start + 1))
        else:
            out.extend(by_depth[depth] for depth in range(low, high + 1))
    return out


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the model would see when continuing from ``leaf``."""

    leaf: Entry | None
    path: list[DomainEntry]  # the part of the path the projection reads (from the kept range on)
    projection: Projection
    estimate: TokenEstimate
    rows_read: int


def context_for_leaf(
    session: ChatSession, leaf_id: str | None = None, *, use_session_leaf: bool = True
) -> ContextView:
    """Project the path to ``leaf_id`` (default: the session's leaf), reading only the rows that matter."""
    if leaf_id is None and use_session_leaf:
        leaf_id = session.leaf_entry_id
    if leaf_id is None:
        empty = project([])
        return ContextView(None, [], empty, estimate_projected_context_tokens(empty, []), 0)
    leaf = find_entry(session, leaf_id)
    table = segment_table(session)
    min_depth = 0
    extra: dict[int, Entry] = {}
    if leaf.compaction_seq is not None:
        compaction = Entry.objects.get(session=session, seq=leaf.compaction_seq)
        extra[compaction.seq] = compaction
        min_depth = compaction.depth or 0
        first_kept = compaction.to_domain().get("firstKeptEntryId")
        if isinstance(first_kept, str):
            kept = latest_entry(session, first_kept)
            if kept is not None and kept.depth is not None and _is_ancestor(session, kept, compaction, table):
                min_depth = kept.depth
    rows = path_rows(session, leaf, min_depth=min_depth, table=table)
    anchors = [s for s in (leaf.model_seq, leaf.thinking_seq) if s is not None]
    anchor_rows = (
        {r.seq: r for r in Entry.objects.filter(session=session, seq__in=anchors)} if anchors else {}
    )
    model_row = anchor_rows.get(leaf.model_seq) if leaf.model_seq is not None else None
    thinking_row = anchor_rows.get(leaf.thinking_seq) if leaf.thinking_seq is not None else None
    settings = settings_from_anchors(
        model_row.to_domain() if model_row else None, thinking_row.to_domain() if thinking_row else None
    )
    path = [row.to_domain() for row in rows]
    projection = project(path, settings=settings)
    estimate = estimate_projected_context_tokens(projection, path)
    return ContextView(leaf, path, projection, estimate, len(rows) + len(extra) + len(anchor_rows) + 1)


def _is_ancestor(session: ChatSession, candidate: Entry, descendant: Entry, table: SegmentTable) -> bool:
    """Return whether ``candidate`` lies on the path root→``descendant``."""
    if candidate.depth is None or descendant.depth is None or candidate.depth > descendant.depth:
        return False
    for segment, low, high in path_ranges(session, descendant, min_depth=candidate.depth, table=table):
        if segment == candidate.segment and low <= candidate.depth <= high:
            return True
    return False


def load_tree(session: ChatSession) -> SessionTree:
    """Load every entry of a session into a tree index (for whole-tree operations such as fork)."""
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("seq", "raw")
    from pitree.entries import entry_from_value
    from pitree.jsjson import parse_json

    return SessionTree(
        [entry_from_value(seq, parse_json(raw)) for seq, raw in rows.iterator(chunk_size=5000)]
    )


def entries_since(session: ChatSession, since: str | None, *, limit: int = 1000) -> list[Entry]:
    """Return entries strictly after the first entry with id ``since`` in append order (Pi RPC cursor)."""
    query = Entry.objects.filter(session=session).order_by("seq")
    if since is not None:
        first = Entry.objects.filter(session=session, entry_id=since).order_by("seq").first()
        if first is None:
            raise EntryNotFound(f"Entry not found: {since}")
        query = query.filter(seq__gt=first.seq)
    return list(query[:limit])


TEAM_SESSIONS_LIMIT = 200


def team_sessions(team: Any, words: str = "") -> list[SessionShare]:
    """Return the shares of the sessions shared with ``team`` (live sessions only), newest activity first.

    ``words``: each must appear in the session's name, folder, file name or owner's username.
    """
    query = (
        SessionShare.objects.filter(team=team, session__deleted_at__isnull=True)
        .select_related("session", "session__owner")
        .annotate(session_first_prompt=first_prompt("session_id"))
        .order_by("-session__updated_at", "-session_id")
    )
    for word in words.split():
        query = query.filter(
            Q(session__name__icontains=word)
            | Q(session__cwd__icontains=word)
            | Q(session__source_filename__icontains=word)
            | Q(session__owner__username__icontains=word)
        )
    return list(query[:TEAM_SESSIONS_LIMIT])
