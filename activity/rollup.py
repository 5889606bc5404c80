"""Keep the activity rollup as things are written: the receivers of the signals of the apps below.

- ``entries_stored`` (answers and commands, in the transaction that stored them, whatever the write
  path): answers, tool calls and changed paths per week for the session's owner, and the week's cost
  from the day totals the costs app stored in the same transaction (its receiver runs first);
- ``run_closed`` and any save of a finished run: the run's week is counted again for whoever started it;
- a saved action-log row of a review verb (``review_request``, ``review_decide``): one review for its actor.

``rebuild_session`` recounts a session from its tables: the repair of ``manage.py reconcile`` (through
``bookkeeping_checked``) and of ``manage.py rebuild_activity``.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection, models, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from actionlog.facade import ActionLog
from activity.domain.weeks import monday, week_of_stamp
from activity.models import PI_TOOLS, FileWeek, ToolWeek, WeekActivity
from agent.facade import AgentRun
from costs.facade import UsageDay
from pitree.jsjson import parse_json
from pitree.tool_uses import shown_path, tool_facts
from sessions_app.facade import ChatSession, Entry, ToolUse

__all__ = [
    "ACTS_ON",
    "REVIEW_VERBS",
    "action_logged",
    "entries_stored",
    "rebuild_session",
    "reconcile_session",
    "run_closed",
    "run_saved",
    "week_of",
]

# Answers (their cost and tool calls) and the user's own commands; a batch of prompts alone is stored
# without the signal, so its commit goes out with its writes.
ACTS_ON = (("message", "assistant"), ("message", "bashExecution"))
# Declared by the reviews app, which this app does not import: it counts their rows in the action log.
REVIEW_VERBS = ("review_request", "review_decide")
TOOL_COLUMNS = tuple(f"tool_{name}" for name in PI_TOOLS)
CHANGING_TOOLS = frozenset({"edit", "write"})
# Roles whose line says something about tools: an assistant's calls, a user's own ``!command``.
_TOOL_ROLES = ("assistant", "bashExecution")
FINISHED = tuple(AgentRun.TERMINAL)


@dataclass(slots=True)
class _Tally:
    """What a batch of answers and commands adds, per week."""

    answers: Counter[date] = field(default_factory=Counter)
    tools: Counter[tuple[date, str]] = field(default_factory=Counter)
    files: Counter[tuple[date, str]] = field(default_factory=Counter)
    priced: set[date] = field(default_factory=set)  # weeks with assistant messages (their cost changed)

    def add(
        self, seq: int, stamp: str, role: str, raw: str | None, *, copies: int, cwd: str, today: date
    ) -> None:
        week = week_of_stamp(stamp, today)
        if role == "assistant":
            self.priced.add(week)
        if seq < copies:
            return  # a fork's or clone's copies were counted in their source
        if role == "assistant":
            self.answers[week] += 1
        if raw is None:
            return
        calls, _result, command = tool_facts(parse_json(raw))
        for call in calls:
            self.tools[week, call.tool] += 1
            if call.tool in CHANGING_TOOLS and call.path:
                shown, _absolute = shown_path(call.path, cwd)
                self.files[week, shown] += 1
        if command is not None:
            self.tools[week, "bash"] += 1


def entries_stored(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Add a stored batch's answers and commands to the rollup (receiver of ``entries_stored``)."""
    tally = _Tally()
    copies, cwd, today = session.copied_entries, session.cwd, timezone.now().date()
    if rows is not None:
        for row in rows:
            if row.type == "message" and row.role in _TOOL_ROLES:
                tally.add(row.seq, row.timestamp, row.role, row.raw, copies=copies, cwd=cwd, today=today)
    else:
        # A bulk import: its lines are not read again (a large one holds 100k answers); the tool calls
        # come from the index the store wrote for the same range in the same transaction.
        stamps: dict[int, str] = {}
        for seq, stamp, role in _read(session.pk, first_seq, last_seq):
            stamps[seq] = stamp
            tally.add(seq, stamp, role, None, copies=copies, cwd=cwd, today=today)
        uses = ToolUse.objects.filter(
            session_id=session.pk, call_seq__range=(max(first_seq, copies), last_seq)
        )
        for seq, tool, path in uses.values_list("call_seq", "tool", "path").iterator(chunk_size=2000):
            called = stamps.get(seq)
            if called is None:
                continue
            week = week_of_stamp(called, today)
            tally.tools[week, tool] += 1
            if tool in CHANGING_TOOLS and path:
                tally.files[week, path] += 1
    _store(session, tally)


def _read(session_id: int, first: int, last: int) -> Iterable[tuple[int, str, str]]:
    """A bulk-stored range's answers and commands (the only lines the rollup counts), without their text."""
    found = Entry.objects.filter(
        session_id=session_id, seq__range=(first, last), type="message", role__in=_TOOL_ROLES
    )
    yield from found.values_list("seq", "timestamp", "role").iterator(chunk_size=2000)


def _store(session: ChatSession, tally: _Tally) -> None:
    owner = session.owner_id
    new_files = _new_files(session.pk, tally.files)
    weeks = set(tally.answers) | {w for w, _ in tally.tools} | set(new_files)
    tool_calls = Counter[date]()
    for (week, _tool), n in tally.tools.items():
        tool_calls[week] += n
    if weeks:
        _merge(
            WeekActivity,
            ("session_id", "week", "person_id"),
            [
                (
                    session.pk,
                    w,
                    owner,
                    tally.answers[w],
                    tool_calls[w],
                    new_files.get(w, 0),
                    *(tally.tools[w, tool] for tool in PI_TOOLS),
                )
                for w in sorted(weeks)
            ],
            add=("answers", "tool_calls", "files_changed", *TOOL_COLUMNS),
        )
    others = sorted((key, n) for key, n in tally.tools.items() if key[1] not in PI_TOOLS)
    if others:
        rows = [(session.pk, w, tool[:200], n) for (w, tool), n in others]
        _merge(ToolWeek, ("session_id", "week", "tool"), rows, add=("calls",))
    if tally.files:
        paths = [(session.pk, w, _digest(p), p, n) for (w, p), n in sorted(tally.files.items())]
        _merge(FileWeek, ("session_id", "week", "digest"), paths, add=("changes",), keep=("path",))
    if tally.priced:
        _recount_cost(session.pk, owner, since=min(tally.priced) - timedelta(days=7))


def _digest(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


def _new_files(session_id: int, files: Counter[tuple[date, str]]) -> dict[date, int]:
    """Return, per week, how many of the batch's paths the week had not changed before."""
    if not files:
        return {}
    wanted = {(w, _digest(p)) for w, p in files}
    weeks = {w for w, _ in wanted}
    known = set(
        FileWeek.objects.filter(
            session_id=session_id, week__in=weeks, digest__in={d for _, d in wanted}
        ).values_list("week", "digest")
    )
    fresh = Counter[date]()
    for week, _ in wanted - known:
        fresh[week] += 1
    return dict(fresh)


def _recount_cost(session_id: int, owner: int, *, since: date | None = None) -> None:
    """Set the owner's weekly cost from the session's day totals (its own messages, not a fork's copies)."""
    days = UsageDay.objects.filter(session_id=session_id, copied=False)
    if since is not None:
        days = days.filter(day__gte=monday(since))
    cost = defaultdict[date, float](float)
    for day, dollars in days.values("day").annotate(c=Sum("cost")).values_list("day", "c"):
        cost[monday(day)] += dollars or 0.0
    if cost:
        rows = [(session_id, w, owner, c) for w, c in sorted(cost.items())]
        _merge(WeekActivity, ("session_id", "week", "person_id"), rows, put=("cost",))


def _merge(
    model: type[models.Model],
    keys: Sequence[str],
    rows: list[tuple[Any, ...]],
    *,
    add: Sequence[str] = (),
    put: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> None:
    """Upsert rows of (keys…, keep…, add…, put…): ``add`` columns are summed, ``put`` ones replaced,
    ``keep`` ones written only by the insert. One statement per 500 rows, on PostgreSQL and SQLite alike."""
    table = model._meta.db_table
    columns = [*keys, *keep, *add, *put]
    sets = [f"{c} = {table}.{c} + excluded.{c}" for c in add] + [f"{c} = excluded.{c}" for c in put]
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    action = f"DO UPDATE SET {', '.join(sets)}" if sets else "DO NOTHING"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            chunk = rows[start : start + 500]
            params = [value for row in chunk for value in row]
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * len(chunk))} "
                f"ON CONFLICT ({', '.join(keys)}) {action}",
                params,
            )


def _week_bounds(week: date) -> tuple[datetime, datetime]:
    start = datetime(week.year, week.month, week.day, tzinfo=UTC)
    return start, start + timedelta(weeks=1)


def week_of(moment: datetime) -> date:
    """Return the Monday of the UTC week of a moment."""
    return monday(moment.astimezone(UTC).date())


def _recount_runs(session_id: int, owner: int, week: date, person: int) -> None:
    """Set one person's runs and failures in a session's week from the runs themselves (idempotent)."""
    start, end = _week_bounds(week)
    starter = Q(requested_by_id=person) | (Q(requested_by__isnull=True) if person == owner else Q(pk__in=[]))
    counts = AgentRun.objects.filter(
        starter, session_id=session_id, status__in=FINISHED, created_at__gte=start, created_at__lt=end
    ).aggregate(runs=Count("pk"), failed=Count("pk", filter=Q(status=AgentRun.Status.FAILED)))
    row = (session_id, week, person, counts["runs"] or 0, counts["failed"] or 0)
    _merge(WeekActivity, ("session_id", "week", "person_id"), [row], put=("runs", "failed_runs"))


def _count_run(run: AgentRun) -> None:
    owner = ChatSession.objects.filter(pk=run.session_id).values_list("owner_id", flat=True).first()
    if owner is None:
        return
    person = run.requested_by_id or owner
    _recount_runs(run.session_id, owner, week_of(run.created_at), person)


def run_closed(sender: Any, *, run: AgentRun, **_: Any) -> None:
    """Count a finished run in its week for whoever started it (receiver of ``run_closed``)."""
    _count_run(run)


def run_saved(sender: Any, *, instance: AgentRun, update_fields: Any = None, **_: Any) -> None:
    """Runs ended by other paths (a failed dispatch, a lost runner) send no ``run_closed``; recounting a
    week is idempotent, so a run counted by both receivers counts once."""
    if instance.status in FINISHED and (update_fields is None or "status" in update_fields):
        _count_run(instance)


def action_logged(sender: Any, *, instance: ActionLog, created: bool = False, **_: Any) -> None:
    """Count a review request or decision for its actor, in the week it was logged."""
    if not created or instance.action not in REVIEW_VERBS:
        return
    if instance.session_id is None or instance.actor_id is None:
        return
    week = week_of(instance.created_at)
    _merge(
        WeekActivity,
        ("session_id", "week", "person_id"),
        [(instance.session_id, week, instance.actor_id, 1)],
        add=("reviews",),
    )


def rebuild_session(session_id: int) -> bool:
    """Recount a session's rollup from its messages, day totals, runs and review rows; False if gone.

    Holds the session row as the entry store does while it appends, so no batch lands in between."""
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().filter(pk=session_id).first()
        if session is None:
            return False
        for model in (WeekActivity, ToolWeek, FileWeek):
            model.objects.filter(session_id=session_id).delete()
        if session.next_seq:
            entries_stored(None, session=session, first_seq=0, last_seq=session.next_seq - 1, rows=None)
        _recount_cost(session_id, session.owner_id)
        runs = AgentRun.objects.filter(session_id=session_id, status__in=FINISHED)
        started = {
            (week_of(created), by or session.owner_id)
            for created, by in runs.values_list("created_at", "requested_by_id")
        }
        for week, person in sorted(started):
            _recount_runs(session_id, session.owner_id, week, person)
        reviews = Counter(
            (week_of(created), actor)
            for created, actor in ActionLog.objects.filter(
                session_id=session_id, action__in=REVIEW_VERBS, actor__isnull=False
            ).values_list("created_at", "actor_id")
        )
        if reviews:
            rows = [(session_id, w, p, n) for (w, p), n in sorted(reviews.items())]
            _merge(WeekActivity, ("session_id", "week", "person_id"), rows, put=("reviews",))
        return True


def reconcile_session(sender: Any, *, session_id: int, **_: Any) -> str | None:
    """Rebuild a session whose rollup disagrees with its messages, runs or reviews (receiver of
    ``bookkeeping_checked``): the previous release wrote without it. Return "activity" when it did."""
    session = ChatSession.objects.filter(pk=session_id).values_list("copied_entries", flat=True).first()
    if session is None:
        return None
    kept = WeekActivity.objects.filter(session_id=session_id).aggregate(
        answers=Sum("answers"), runs=Sum("runs"), reviews=Sum("reviews")
    )
    answers = Entry.objects.filter(
        session_id=session_id, type="message", role="assistant", seq__gte=session
    ).count()
    runs = AgentRun.objects.filter(session_id=session_id, status__in=FINISHED).count()
    reviews = ActionLog.objects.filter(
        session_id=session_id, action__in=REVIEW_VERBS, actor__isnull=False
    ).count()
    if (kept["answers"] or 0, kept["runs"] or 0, kept["reviews"] or 0) == (answers, runs, reviews):
        return None
    rebuild_session(session_id)
    return "activity"
