"""The context panel's read: a page of the context (head and tail) and its totals from a few rows.

The totals come from the running sums (``domain.context_sums``) of the leaf, the compaction's first
kept entry and the usage anchor, plus the few context edits and system messages on the path; the
messages shown come from the rows at both ends of the path. Nothing reads the whole path, so the
answer costs the same at the leaf of a 100k-entry session as at a short one. Where the sums do not
cover a path (entries stored before them, or a hand-made edit the sums decline) the caller projects
in full, which gives the same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from pitree.context_sums import (
    ROOT,
    ContextFacts,
    ContextTotals,
    PathSums,
    Placed,
    above,
    compaction_messages,
    context_messages,
    context_totals,
)
from pitree.projection import SessionSettings, settings_from_anchors
from sessions_app.models import ChatSession, Entry, EntrySums
from sessions_app.queries import SegmentTable, _is_ancestor, latest_entry, path_ranges, segment_table

__all__ = ["ContextPage", "PageMessage", "context_page"]

# Rows read per step at an end of the path, beyond the messages asked for (labels, changes and
# omitted entries show no message).
_SLACK = 16


@dataclass(frozen=True, slots=True)
class PageMessage:
    entry_id: str | None
    depth: int
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ContextPage:
    leaf: Entry
    settings: SessionSettings
    totals: ContextTotals
    head: list[PageMessage]
    tail: list[PageMessage]
    skipped: int
    rows_read: int


def _sums(session: ChatSession, seqs: Iterable[int]) -> dict[int, PathSums]:
    rows = EntrySums.objects.filter(session=session, seq__in=set(seqs)).values_list(
        "seq", "tokens", "all_tokens", "messages", "usage_seq"
    )
    return {seq: PathSums(t, a, m, u) for seq, t, a, m, u in rows}


def _in_ranges(ranges: Sequence[tuple[int, int, int]]) -> RawSQL:
    """Return the condition "on one of these path ranges" for a filter of entries.

    The same disjunction the ORM would build from ``Q`` objects, written out once: at the leaf of a long
    history with many rewinds the path crosses hundreds of segments, and composing as many ``Q`` nodes
    cost more (about 25 ms) than the queries themselves."""
    quote = connection.ops.quote_name
    table = quote(Entry._meta.db_table)
    one = f"({table}.{quote('segment')} = %s AND {table}.{quote('depth')} BETWEEN %s AND %s)"
    sql = " OR ".join([one] * len(ranges)) or "1 = 0"
    params = [value for segment, low, high in ranges for value in (segment, low, high)]
    return RawSQL(f"({sql})", params, output_field=BooleanField())


def _placed(rows: Iterable[Entry]) -> list[Placed]:
    return [Placed(row.depth or 0, row.to_domain()) for row in rows]


def context_page(
    session: ChatSession,
    leaf_id: str,
    *,
    head: int,
    tail: int,
    before_depth: int | None = None,
) -> ContextPage | None:
    """Return the first ``head`` and last ``tail`` context messages at ``leaf_id``, with the totals.

    ``before_depth`` pages towards the head: the tail then ends above that depth and ``head`` should be
    0. Return None when the sums do not cover this path (the caller projects in full).
    """
    from sessions_app.queries import find_entry

    leaf = find_entry(session, leaf_id)
    if leaf.depth is None:
        return None
    table = segment_table(session)
    wanted = {leaf.seq}
    compaction = None
    start_depth = 0
    kept: Entry | None = None
    if leaf.compaction_seq is not None:
        compaction = Entry.objects.get(session=session, seq=leaf.compaction_seq)
        start_depth = compaction.depth or 0
        wanted.add(compaction.seq)
        first_kept = compaction.to_domain().get("firstKeptEntryId")
        if isinstance(first_kept, str):
            kept = latest_entry(session, first_kept)
            if kept is not None and kept.depth is not None and _is_ancestor(session, kept, compaction, table):
                start_depth = kept.depth
                wanted.add(kept.seq)
            else:
                kept = None
    sums = _sums(session, wanted)
    leaf_sums = sums.get(leaf.seq)
    if leaf_sums is None:
        return None
    if kept is not None:
        if kept.seq not in sums:
            return None
        above_start = above(sums[kept.seq], kept.to_domain())
    elif compaction is not None:
        if compaction.seq not in sums:
            return None
        above_start = sums[compaction.seq]  # a compaction adds nothing to the sums
    else:
        above_start = ROOT
    ranges = path_ranges(session, leaf, min_depth=start_depth, table=table)
    on_path = _in_ranges(ranges)
    special = list(
        Entry.objects.filter(on_path, session=session).filter(
            Q(type="context_edit") | Q(role="system", type="message")
        )
    )
    edits = _placed(r for r in special if r.type == "context_edit")
    systems = _placed(r for r in special if r.type == "message")
    targets: list[Placed] = []
    names = {t for e in edits if isinstance(t := e.entry.get("targetId"), str)}
    if names:
        targets = _placed(Entry.objects.filter(on_path, session=session, entry_id__in=names))
    usage = None
    if leaf_sums.usage_seq is not None:
        anchor = Entry.objects.get(session=session, seq=leaf_sums.usage_seq)
        anchor_sums = _sums(session, [anchor.seq]).get(anchor.seq)
        if anchor_sums is None or anchor.depth is None:
            return None
        usage = (Placed(anchor.depth, anchor.to_domain()), anchor_sums)
    c_placed = Placed(compaction.depth or 0, compaction.to_domain()) if compaction is not None else None
    facts = ContextFacts(
        leaf_depth=leaf.depth,
        leaf=leaf_sums,
        compaction=c_placed,
        start_depth=start_depth,
        above_start=above_start,
        usage=usage,
        edits=edits,
        systems=systems,
        targets=targets,
    )
    totals = context_totals(facts)
    if totals is None:
        return None
    reader = _Ends(session, leaf, table, facts, totals)
    top = leaf.depth if before_depth is None else min(leaf.depth, before_depth - 1)
    tail_items = reader.tail(top, tail)
    limit = totals.message_count - len(tail_items) if before_depth is None else 0
    head_items = reader.head(min(head, limit))
    skipped = (totals.message_count - len(tail_items) - len(head_items)) if before_depth is None else 0
    settings = _settings(session, leaf)
    return ContextPage(leaf, settings, totals, head_items, tail_items, skipped, reader.rows_read)


def _settings(session: ChatSession, leaf: Entry) -> SessionSettings:
    anchors = [s for s in (leaf.model_seq, leaf.thinking_seq) if s is not None]
    rows = {r.seq: r for r in Entry.objects.filter(session=session, seq__in=anchors)} if anchors else {}
    model = rows.get(leaf.model_seq) if leaf.model_seq is not None else None
    thinking = rows.get(leaf.thinking_seq) if leaf.thinking_seq is not None else None
    return settings_from_anchors(
        model.to_domain() if model else None, thinking.to_domain() if thinking else None
    )


class _Ends:
    """Reads the context's messages from either end of the path, a window of rows at a time."""

    def __init__(
        self,
        session: ChatSession,
        leaf: Entry,
        table: SegmentTable,
        facts: ContextFacts,
        totals: ContextTotals,
    ) -> None:
        self.session, self.leaf, self.table, self.facts, self.totals = session, leaf, table, facts, totals
        self.rows_read = 0

    def _rows(self, low: int, high: int) -> list[Placed]:
        ranges = path_ranges(self.session, self.leaf, min_depth=low, max_depth=high, table=self.table)
        if not ranges:
            return []
        rows = Entry.objects.filter(_in_ranges(ranges), session=self.session).order_by("depth")
        placed = _placed(rows)
        self.rows_read += len(placed)
        return placed

    def _shape(self, rows: Sequence[Placed]) -> list[PageMessage]:
        return [
            PageMessage(p.entry.id, p.depth, m)
            for p, m in context_messages(rows, self.facts, self.totals.edits)
        ]

    def tail(self, top: int, count: int) -> list[PageMessage]:
        out: list[PageMessage] = []
        step = count + _SLACK
        while count > 0 and top >= self.facts.start_depth:
            low = max(self.facts.start_depth, top - step + 1)
            out = self._shape(self._rows(low, top)) + out
            top = low - 1
            step *= 2
            if len(out) >= count:
                break
        if len(out) < count and top < self.facts.start_depth:
            # The page reaches the start: the compaction's messages open the context.
            out = self._opening() + out
        return out[-count:] if count else []

    def _opening(self) -> list[PageMessage]:
        first = self.facts.compaction
        if first is None:
            return []
        return [
            PageMessage(first.entry.id, first.depth, m)
            for m in compaction_messages(self.facts, self.totals.edits)
        ]

    def head(self, count: int) -> list[PageMessage]:
        if count <= 0:
            return []
        out = self._opening()
        low = self.facts.start_depth
        step = count + _SLACK
        while len(out) < count and low <= self.facts.leaf_depth:
            high = min(self.facts.leaf_depth, low + step - 1)
            out += self._shape(self._rows(low, high))
            low = high + 1
            step *= 2
        return out[:count]
