"""Token and cost totals per user, team and model, from every assistant message and every summary run.

Every assistant entry counts, on any branch, so abandoned branches and failed attempts are included,
once: the copies a fork or clone starts with count in their source only (``copied_entries``). A deleted
session stops counting when it is deleted, before its rows are purged.
On PostgreSQL the sums are computed in the database from ``raw::jsonb``; elsewhere the rows are
streamed and summed here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, Sum

from audit.models import SessionUsage
from compaction_app.facade import CompactionRun
from pitree.jsjson import parse_json
from sessions_app.facade import ChatSession, Entry, SessionShare

TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
NO_MODEL = "(unknown)"


@dataclass(slots=True)
class Totals:
    """Running sums; ``messages`` counts assistant messages and summary runs alike."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    messages: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: Totals) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.cost += other.cost
        self.messages += other.messages


@dataclass(frozen=True, slots=True)
class UsageRow:
    owner_id: int
    model: str  # "provider/model"
    totals: Totals


@dataclass(frozen=True, slots=True)
class Rollup:
    by_user: list[tuple[str, Totals]]
    by_team: list[tuple[str, Totals]]
    by_model: list[tuple[str, Totals]]
    overall: Totals = field(default_factory=Totals)


def compute_rollup(*, recount: bool = False) -> Rollup:
    """Return the usage totals, largest cost first in each table, in a fixed number of queries.

    On PostgreSQL the messages' share comes from the rollup kept at append time (``usage_rollup``);
    ``recount`` adds up every assistant message instead, as a check of that rollup.
    """
    messages = _message_rows_sql() if recount and connection.vendor == "postgresql" else _message_rows()
    rows = [*messages, *_summary_rows()]
    users: dict[int, Totals] = defaultdict(Totals)
    models: dict[str, Totals] = defaultdict(Totals)
    overall = Totals()
    for row in rows:
        users[row.owner_id].add(row.totals)
        models[row.model].add(row.totals)
        overall.add(row.totals)
    names = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "username"))
    return Rollup(
        by_user=_ordered((names.get(pk, f"#{pk}"), totals) for pk, totals in users.items()),
        by_team=_ordered(_team_totals(recount=recount).items()),
        by_model=_ordered(models.items()),
        overall=overall,
    )


def _team_totals(*, recount: bool) -> dict[str, Totals]:
    """Return each team's usage: that of the sessions shared with it, never its members' other sessions.

    A session shared with two teams counts in both.
    """
    shared: dict[int, list[str]] = defaultdict(list)
    for team, session in SessionShare.objects.filter(session__deleted_at__isnull=True).values_list(
        "team__name", "session_id"
    ):
        shared[session].append(team)
    teams: dict[str, Totals] = defaultdict(Totals)
    if not shared:
        return teams
    per_session: dict[int, Totals] = defaultdict(Totals)
    for session, totals in _session_rows(set(shared), recount=recount):
        per_session[session].add(totals)
    for session, names in shared.items():
        for name in names:
            teams[name].add(per_session.get(session, Totals()))
    return teams


def _session_rows(sessions: set[int], *, recount: bool) -> Iterator[tuple[int, Totals]]:
    """Yield (session, totals) for the given sessions' assistant messages and summary runs."""
    if connection.vendor == "postgresql" and not recount:
        kept = (
            SessionUsage.objects.filter(session_id__in=sessions)
            .values("session_id")
            .annotate(
                tin=Sum("input"),
                tout=Sum("output"),
                cread=Sum("cache_read"),
                cwrite=Sum("cache_write"),
                tcost=Sum("cost"),
                count=Sum("messages"),
            )
            .order_by()
        )
        for row in kept:
            yield (
                row["session_id"],
                Totals(
                    int(row["tin"]),
                    int(row["tout"]),
                    int(row["cread"]),
                    int(row["cwrite"]),
                    float(row["tcost"]),
                    int(row["count"]),
                ),
            )
    else:
        rows = (
            Entry.objects.filter(role="assistant", type="message", session_id__in=sessions)
            .filter(seq__gte=F("session__copied_entries"))
            .values_list("session_id", "raw")
            .iterator(chunk_size=2000)
        )
        for session, raw in rows:
            payload = parse_json(raw)
            message = payload.get("message") if isinstance(payload, dict) else None
            if isinstance(message, dict):
                yield session, _totals(message.get("usage"))
    runs = CompactionRun.objects.exclude(usage__isnull=True).filter(session_id__in=sessions)
    for session, usage, cost in runs.values_list("session_id", "usage", "cost").iterator(chunk_size=2000):
        totals = _totals(usage)
        if cost is not None:
            totals.cost = float(cost)
        yield session, totals


def _ordered(items: Iterable[tuple[str, Totals]]) -> list[tuple[str, Totals]]:
    return sorted(items, key=lambda item: (-item[1].cost, -item[1].total_tokens, item[0]))


def _message_rows() -> Iterator[UsageRow]:
    if connection.vendor == "postgresql":
        yield from _message_rows_kept()
    else:
        yield from _message_rows_python()


def _message_rows_kept() -> Iterator[UsageRow]:
    """Sum the per-session rollup rows by owner and model: one small query, whatever the entry count."""
    kept = (
        SessionUsage.objects.filter(session__deleted_at__isnull=True)
        .values("session__owner_id", "model")
        .annotate(
            tin=Sum("input"),
            tout=Sum("output"),
            cread=Sum("cache_read"),
            cwrite=Sum("cache_write"),
            tcost=Sum("cost"),
            count=Sum("messages"),
        )
        .order_by()
    )
    for row in kept:
        totals = Totals(
            int(row["tin"]),
            int(row["tout"]),
            int(row["cread"]),
            int(row["cwrite"]),
            float(row["tcost"]),
            int(row["count"]),
        )
        yield UsageRow(row["session__owner_id"], row["model"], totals)


def _message_rows_sql() -> Iterator[UsageRow]:
    entry, session = Entry._meta.db_table, ChatSession._meta.db_table
    # One pass over the assistant rows; the JSON is parsed by the database, never shipped here.
    query = f"""
        SELECT s.owner_id,
               coalesce(m.j #>> '{{message,provider}}', '') AS provider,
               coalesce(m.j #>> '{{message,model}}', '') AS model,
               {_sum_number("usage,input")}, {_sum_number("usage,output")},
               {_sum_number("usage,cacheRead")}, {_sum_number("usage,cacheWrite")},
               {_sum_number("usage,cost,total")}, count(*)
          FROM (SELECT session_id, seq, raw::jsonb AS j FROM {entry}
                 WHERE role = 'assistant' AND type = 'message'
                   AND strpos(raw, '\\u0000') = 0) AS m
          JOIN {session} AS s ON s.id = m.session_id
         WHERE s.deleted_at IS NULL AND m.seq >= s.copied_entries
         GROUP BY 1, 2, 3
    """
    with connection.cursor() as cursor:
        cursor.execute(query)
        for owner, provider, model, tin, tout, cread, cwrite, cost, count in cursor.fetchall():
            totals = Totals(int(tin), int(tout), int(cread), int(cwrite), float(cost), int(count))
            yield UsageRow(owner, _model_name(provider, model), totals)


def _sum_number(path: str) -> str:
    """Return SQL summing a numeric field under ``message``; anything that is not a number counts as 0."""
    where = f"m.j #> '{{message,{path}}}'"
    return f"coalesce(sum(CASE WHEN jsonb_typeof({where}) = 'number' THEN ({where})::text::numeric END), 0)"


def _message_rows_python() -> Iterator[UsageRow]:
    rows = (
        Entry.objects.filter(role="assistant", type="message", session__deleted_at__isnull=True)
        .filter(seq__gte=F("session__copied_entries"))
        .values_list("session__owner_id", "raw")
        .iterator(chunk_size=2000)
    )
    for owner, raw in rows:
        payload = parse_json(raw)
        message = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(message, dict):
            continue
        name = _model_name(message.get("provider"), message.get("model"))
        yield UsageRow(owner, name, _totals(message.get("usage")))


def _summary_rows() -> Iterator[UsageRow]:
    runs = (
        CompactionRun.objects.exclude(usage__isnull=True)
        .filter(session__deleted_at__isnull=True)
        .values_list("session__owner_id", "model", "usage", "cost")
    )
    for owner, model, usage, cost in runs.iterator(chunk_size=2000):
        totals = _totals(usage)
        if cost is not None:
            totals.cost = float(cost)
        yield UsageRow(owner, model or NO_MODEL, totals)


def _totals(value: Any) -> Totals:
    usage: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    found = usage.get("cost")
    cost: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    tokens = [_int(usage.get(name)) for name in TOKEN_FIELDS]
    return Totals(tokens[0], tokens[1], tokens[2], tokens[3], cost=_num(cost.get("total")), messages=1)


def _model_name(provider: Any, model: Any) -> str:
    provider, model = str(provider or ""), str(model or "")
    if not model:
        return NO_MODEL
    return f"{provider}/{model}" if provider else model


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
