"""Read side of costs: each answer is a constant number of small reads, whatever the session's size."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Count, F, QuerySet, Sum

from compaction_app.facade import CompactionRun
from costs.domain import charge_message
from costs.models import MessageCost, UsageDay
from sessions_app.facade import ChatSession, Entry, Segment, SessionShare

__all__ = [
    "Totals",
    "branch_totals",
    "export_costs",
    "message_costs",
    "session_totals",
    "usage_report",
]


@dataclass(slots=True)
class Totals:
    cost: float = 0.0
    tokens: int = 0
    messages: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    unpriced: int = 0

    def minus(self, other: Totals) -> Totals:
        """Return what this holds beyond ``other`` (a cost never goes below 0 by rounding)."""
        return Totals(
            cost=max(0.0, self.cost - other.cost),
            tokens=max(0, self.tokens - other.tokens),
            messages=max(0, self.messages - other.messages),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "cost": round(self.cost, 10),
            "tokens": self.tokens,
            "messages": self.messages,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "unpriced": self.unpriced,
        }


def branch_totals(session: ChatSession, entry: Entry | None) -> Totals:
    """Return the cost of the path root → ``entry`` (inclusive): its nearest assistant's path sums.

    One indexed read per segment walked up until an assistant message is found.
    """
    if entry is None or entry.segment is None or entry.depth is None:
        return Totals()
    segment, limit = entry.segment, entry.depth
    while True:
        row = (
            MessageCost.objects.filter(session=session, segment=segment, depth__lte=limit)
            .order_by("-depth")
            .values_list("path_cost", "path_tokens", "path_messages")
            .first()
        )
        if row is not None:
            return Totals(cost=row[0], tokens=row[1], messages=row[2])
        found = (
            Segment.objects.filter(session=session, index=segment)
            .values_list("parent_index", "start_depth")
            .first()
        )
        if found is None or found[0] is None:
            return Totals()
        segment, limit = found[0], found[1] - 1


def session_totals(session_ids: Iterable[int]) -> dict[int, Totals]:
    """Return each session's totals over all its branches, from its day rows: a fork's or clone's
    include the messages it copied, like its branches' costs."""
    sums = (
        UsageDay.objects.filter(session_id__in=list(session_ids))
        .values("session_id")
        .annotate(**_SUMS)
        .order_by()
    )
    return {row["session_id"]: _totals(row) for row in sums}


def message_costs(session: ChatSession, seqs: Iterable[int]) -> dict[int, MessageCost]:
    """Return the cost rows of the given entries that are assistant messages, by sequence."""
    rows = MessageCost.objects.filter(session=session, seq__in=list(seqs))
    return {row.seq: row for row in rows}


def export_costs(sender: Any, *, session: ChatSession, seqs: Iterable[int], **_: Any) -> dict[int, float]:
    """Answer a readable export's ``costs_wanted``: each assistant message's cost, as the page shows it."""
    rows = MessageCost.objects.filter(session=session, seq__in=list(seqs)).values_list("seq", "cost")
    return {seq: float(cost) for seq, cost in rows}


@dataclass(slots=True)
class Report:
    totals: Totals
    by_model: list[tuple[str, Totals]]
    days: list[tuple[date, str, Totals]]
    sessions: int = 0


def usage_report(sessions: QuerySet[ChatSession], *, since: date | None = None) -> Report:
    """Return the totals, per model and per day and model, of the given sessions' assistant messages.

    The messages a fork or clone copied are left out: each provider call counts once, in the session
    that made it, even when the source and its copies are all in ``sessions``.
    """
    rows = UsageDay.objects.filter(session__in=sessions.values("pk"), copied=False)
    if since is not None:
        rows = rows.filter(day__gte=since)
    days: list[tuple[date, str, Totals]] = []
    models: dict[str, Totals] = defaultdict(Totals)
    overall = Totals()
    for row in rows.values("day", "model").annotate(**_SUMS).order_by("day", "model"):
        totals = _totals(row)
        days.append((row["day"], row["model"], totals))
        _add(models[row["model"]], totals)
        _add(overall, totals)
    for day, model, totals in _summary_rows(sessions, since):
        days.append((day, model, totals))
        _add(models[model], totals)
        _add(overall, totals)
    days.sort(key=lambda item: (item[0], item[1]))
    by_model = sorted(models.items(), key=lambda item: (-item[1].cost, -item[1].tokens, item[0]))
    counted = rows.aggregate(n=Count("session_id", distinct=True))["n"] or 0
    return Report(totals=overall, by_model=by_model, days=days, sessions=counted)


def _summary_rows(sessions: QuerySet[ChatSession], since: date | None) -> Iterable[tuple[date, str, Totals]]:
    """Yield the compactions and branch summaries a model wrote for these sessions (few rows per session)."""
    runs = CompactionRun.objects.filter(session__in=sessions.values("pk")).exclude(usage__isnull=True)
    if since is not None:
        runs = runs.filter(created_at__date__gte=since)
    for created, model, usage, cost in runs.values_list("created_at", "model", "usage", "cost"):
        charge = charge_message({"usage": usage, "model": model or ""}, {})
        recorded = float(cost) if cost is not None else charge.cost
        yield (
            created.date(),
            charge.model,
            Totals(
                cost=recorded,
                tokens=charge.tokens,
                messages=1,
                input=charge.input,
                output=charge.output,
                cache_read=charge.cache_read,
                cache_write=charge.cache_write,
            ),
        )


def own_sessions(user: Any) -> QuerySet[ChatSession]:
    """Return the live sessions ``user`` owns: whose usage is theirs."""
    return ChatSession.objects.filter(owner=user)


def team_sessions(team_id: int) -> QuerySet[ChatSession]:
    """Return the live sessions shared with the team: its usage counts these only."""
    shared = SessionShare.objects.filter(team_id=team_id).values("session_id")
    return ChatSession.objects.filter(pk__in=shared)


_SUMS = {
    "s_cost": Sum("cost"),
    "s_input": Sum("input"),
    "s_output": Sum("output"),
    "s_cache_read": Sum("cache_read"),
    "s_cache_write": Sum("cache_write"),
    "s_messages": Sum("messages"),
    "s_unpriced": Sum("unpriced"),
    "s_tokens": Sum(F("input") + F("output") + F("cache_read") + F("cache_write")),
}


def _totals(row: Mapping[str, Any]) -> Totals:
    return Totals(
        cost=float(row["s_cost"] or 0),
        tokens=int(row["s_tokens"] or 0),
        messages=int(row["s_messages"] or 0),
        input=int(row["s_input"] or 0),
        output=int(row["s_output"] or 0),
        cache_read=int(row["s_cache_read"] or 0),
        cache_write=int(row["s_cache_write"] or 0),
        unpriced=int(row["s_unpriced"] or 0),
    )


def _add(into: Totals, other: Totals) -> None:
    for name in ("cost", "tokens", "messages", "input", "output", "cache_read", "cache_write", "unpriced"):
        setattr(into, name, getattr(into, name) + getattr(other, name))
