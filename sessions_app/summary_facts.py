"""What a summary in a context replaced: how many messages (and, for a compaction, how many tokens).

A compaction replaced the messages on its path from the previous compaction's first kept entry (or the
root) up to its own first kept entry; a branch summary replaced the messages of the branch it was
written for, from below the common ancestor down to its ``fromId``. Each answer is a couple of
indexed queries over the path's segments, whatever the session's size: the ranges are joined as a
list (one index probe each) rather than built into an OR of conditions, which on a path through
hundreds of branch points took longer to compile than to run.
"""

from __future__ import annotations

from typing import Any, cast

from sessions_app import queries
from sessions_app.models import ChatSession, Entry

__all__ = ["replaced_by_summaries"]


def _count_messages(session: ChatSession, ranges: list[tuple[int, int, int]]) -> int:
    """Count the message entries at (segment, low..high depth) ranges of one path."""
    counts = queries.join_entries(
        session, ranges, "seg, lo, hi", on=queries.IN_RANGE, select="count(*)", where="e.type = 'message'"
    )
    return sum(int(count) for (count,) in counts)


def _messages(session: ChatSession, leaf: Entry, low: int, high: int, table: Any) -> int:
    if high < low:
        return 0
    return _count_messages(
        session, queries.path_ranges(session, leaf, min_depth=low, max_depth=high, table=table)
    )


def _deepest_compaction_above(
    session: ChatSession, entry: Entry, compactions: list[tuple[int, int, int]], table: Any
) -> Entry | None:
    """Return the deepest compaction on the path above ``entry`` (compactions: (segment, depth, seq))."""
    if entry.depth is None or not compactions:
        return None
    ranges = {
        s: (low, high)
        for s, low, high in queries.path_ranges(session, entry, max_depth=entry.depth - 1, table=table)
    }
    on_path = [
        (depth, seq)
        for segment, depth, seq in compactions
        if segment in ranges and ranges[segment][0] <= depth <= ranges[segment][1]
    ]
    if not on_path:
        return None
    return Entry.objects.filter(session=session, seq=max(on_path)[1]).first()


def _entry(session: ChatSession, entry_id: Any) -> Entry | None:
    if not isinstance(entry_id, str):
        return None
    return Entry.objects.filter(session=session, entry_id=entry_id).first()


def _common_depth(session: ChatSession, one: Entry, other: Entry, table: Any) -> int:
    """Return the depth of the deepest entry on both paths root→one and root→other (-1 if none)."""
    deepest = -1
    theirs = queries.path_ranges(session, other, table=table)
    for segment, low, high in queries.path_ranges(session, one, table=table):
        for segment2, low2, high2 in theirs:
            if segment == segment2 and min(high, high2) >= max(low, low2):
                deepest = max(deepest, min(high, high2))
    return deepest


def _offline(payload: dict[str, Any]) -> bool:
    """Whether the built-in offline summarizer wrote it (marked in its details), not a model."""
    details = payload.get("details")
    return isinstance(details, dict) and details.get("offline") is True


def replaced_by_summaries(session: ChatSession, entry_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Return ``{summary entry id: {"messages": n, "tokens": n | None, "offline": bool}}`` for
    compaction and branch summary entries among ``entry_ids`` (others are skipped)."""
    out: dict[str, dict[str, Any]] = {}
    rows = Entry.objects.filter(
        session=session, entry_id__in=entry_ids, type__in=("compaction", "branch_summary")
    )
    table = queries.segment_table(session) if rows else None
    compactions: list[tuple[int, int, int]] | None = None
    for row in rows:
        payload = row.payload()
        if not isinstance(payload, dict) or row.depth is None:
            continue
        if row.type == "compaction":
            kept = _entry(session, payload.get("firstKeptEntryId"))
            if kept is None or kept.depth is None:
                continue
            if compactions is None:
                # Compactions are few (the type index finds them); which lie on this path is decided here.
                compactions = [
                    (segment, depth, seq)
                    for segment, depth, seq in Entry.objects.filter(
                        session=session, type="compaction"
                    ).values_list("segment", "depth", "seq")
                    if segment is not None and depth is not None
                ]
            earlier = _deepest_compaction_above(session, row, compactions, table)
            before = earlier.payload() if earlier is not None else None
            start = _entry(session, before.get("firstKeptEntryId")) if isinstance(before, dict) else None
            low = start.depth if start is not None and start.depth is not None else 0
            tokens = payload.get("tokensBefore")
            out[cast(str, row.entry_id)] = {
                "messages": _messages(session, kept, low, kept.depth - 1, table),
                "tokens": tokens if isinstance(tokens, int) else None,
                "offline": _offline(payload),
            }
        else:
            branch_end = _entry(session, payload.get("fromId"))
            if branch_end is None or branch_end.depth is None:
                continue
            # The summary hangs under the entry navigated to; the branch left starts below the deepest
            # entry that both paths share.
            parent = _entry(session, row.parent_id)
            ancestor = _common_depth(session, branch_end, parent, table) if parent is not None else -1
            out[cast(str, row.entry_id)] = {
                "messages": _messages(session, branch_end, ancestor + 1, branch_end.depth, table),
                "tokens": None,
                "offline": _offline(payload),
            }
    return out
