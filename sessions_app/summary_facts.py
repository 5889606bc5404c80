"""What a summary in a context replaced: how many messages (and, for a compaction, how many tokens).

A compaction replaced the messages on its path from the previous compaction's first kept entry (or the
root) up to its own first kept entry; a branch summary replaced the messages of the branch it was
written for, from below the common ancestor down to its ``fromId``. Each answer is a couple of
indexed queries over the path's segments, whatever the session's size.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from . import queries
from .models import ChatSession, Entry

__all__ = ["replaced_by_summaries"]


def _path_filter(session: ChatSession, leaf: Entry, low: int, high: int, table: Any) -> Q | None:
    ranges = queries.path_ranges(session, leaf, min_depth=low, max_depth=high, table=table)
    if not ranges:
        return None
    cond = Q()
    for segment, start, end in ranges:
        cond |= Q(segment=segment, depth__gte=start, depth__lte=end)
    return cond


def _messages(session: ChatSession, leaf: Entry, low: int, high: int, table: Any) -> int:
    if high < low:
        return 0
    cond = _path_filter(session, leaf, low, high, table)
    if cond is None:
        return 0
    return Entry.objects.filter(cond, session=session, type="message").count()


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
    for row in rows:
        payload = row.payload()
        if not isinstance(payload, dict) or row.depth is None:
            continue
        if row.type == "compaction":
            kept = _entry(session, payload.get("firstKeptEntryId"))
            if kept is None or kept.depth is None:
                continue
            cond = _path_filter(session, row, 0, row.depth - 1, table)
            earlier = (
                Entry.objects.filter(cond, session=session, type="compaction").order_by("-depth").first()
                if cond is not None
                else None
            )
            before = earlier.payload() if earlier is not None else None
            start = _entry(session, before.get("firstKeptEntryId")) if isinstance(before, dict) else None
            low = start.depth if start is not None and start.depth is not None else 0
            tokens = payload.get("tokensBefore")
            out[row.entry_id] = {
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
            out[row.entry_id] = {
                "messages": _messages(session, branch_end, ancestor + 1, branch_end.depth, table),
                "tokens": None,
                "offline": _offline(payload),
            }
    return out
