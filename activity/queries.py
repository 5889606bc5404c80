"""Read side of team activity: the rollup of the sessions shared with a team, by person and ISO week.

Every read joins the rollup with the team's shares at the time of asking, so a member sees exactly the
sessions every member may read through the team, and an unshared session is gone from every number.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Sum

from activity.domain.weeks import label, monday, weeks
from activity.models import PI_TOOLS, FileWeek, ToolWeek, WeekActivity
from sessions_app.facade import SessionShare
from teams.facade import Team

__all__ = ["Numbers", "Report", "TopFile", "shared_with", "team_report", "top_files"]

NUMBERS = ("sessions", "answers", "runs", "failed_runs", "reviews", "cost", "tool_calls", "files_changed")


@dataclass(slots=True)
class Numbers:
    """One cell of the report: a person's week, a person's range, a week of the team or its whole range."""

    sessions: int = 0
    answers: int = 0
    runs: int = 0
    failed_runs: int = 0
    reviews: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    files_changed: int = 0
    tools: Counter[str] = field(default_factory=Counter)

    def add(self, other: Numbers, *, sessions: bool = True) -> None:
        for name in NUMBERS:
            if name != "sessions" or sessions:
                setattr(self, name, getattr(self, name) + getattr(other, name))
        self.tools.update(other.tools)

    def as_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "answers": self.answers,
            "runs": self.runs,
            "failedRuns": self.failed_runs,
            "reviews": self.reviews,
            "cost": round(self.cost, 6),
            "toolCalls": self.tool_calls,
            "filesChanged": self.files_changed,
            "tools": dict(self.tools.most_common()),
        }


Cell = tuple[int, int, int, int, int, float, int, int]  # a row's numbers in ``NUMBERS`` order


def _numbers(cell: Cell | list[Any]) -> Numbers:
    return Numbers(*cell)


@dataclass(slots=True)
class Report:
    team: Team
    start: date  # the first day asked for
    end: date  # the last day asked for
    weeks: list[date]
    names: dict[int, str]  # person id → username
    cells: dict[tuple[date, int], Cell]  # (week, person) → numbers; only cells with something in them
    by_week: dict[date, Numbers]
    by_person: dict[int, Numbers]  # sessions counted once over the range
    totals: Numbers
    tools: list[str]  # every tool named in the range, most used first
    cell_tools: dict[tuple[date, int], Counter[str]] | None = None  # read for the CSV only

    def people(self) -> list[int]:
        """Person ids, the most active first (runs, then answers), then by name."""
        return sorted(
            self.by_person,
            key=lambda p: (-self.by_person[p].runs, -self.by_person[p].answers, self.names.get(p, "")),
        )

    def rows(self) -> list[tuple[date, int, Numbers]]:
        """Per person per week, weeks in order and people by name: the CSV's rows."""
        tools = self.cell_tools or {}
        found = []
        for (week, person), cell in self.cells.items():
            numbers = _numbers(cell)
            numbers.tools = tools.get((week, person), Counter())
            found.append((week, person, numbers))
        return sorted(found, key=lambda r: (r[0], self.names.get(r[1], ""), r[1]))

    def as_json(self, *, rows: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {
            "team": {"id": self.team.pk, "name": self.team.name},
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "tools": self.tools,
            "totals": self.totals.as_json(),
            "weeks": [
                {"week": w.isoformat(), "label": label(w), **self.by_week[w].as_json()} for w in self.weeks
            ],
            "people": [
                {"id": p, "name": self.names.get(p, ""), **self.by_person[p].as_json()} for p in self.people()
            ],
        }
        if rows:
            # Per person per week; the tool mix is in the weeks and the people (and per row in the CSV).
            body["rows"] = [
                {"week": w.isoformat(), "person": self.names.get(p, ""), **_row_json(c)}
                for (w, p), c in sorted(
                    self.cells.items(), key=lambda i: (i[0][0], self.names.get(i[0][1], ""))
                )
            ]
        return body


def _row_json(cell: Cell) -> dict[str, Any]:
    sessions, answers, runs, failed, reviews, cost, tool_calls, files = cell
    return {
        "sessions": sessions,
        "answers": answers,
        "runs": runs,
        "failedRuns": failed,
        "reviews": reviews,
        "cost": round(cost, 6),
        "toolCalls": tool_calls,
        "filesChanged": files,
    }


def shared_with(team: Team) -> QuerySet[Any]:
    """The ids of the live sessions shared with the team: what each member may read through it."""
    return SessionShare.objects.filter(team=team, session__deleted_at__isnull=True).values("session_id")


def team_report(
    team: Team, start: date, end: date, *, cells: bool = True, cell_tools: bool = False
) -> Report:
    """Return the team's activity from ``start``'s ISO week to ``end``'s: grouped reads of the rollup
    joined with the team's shares. ``cells``: also each person's weeks (the REST rows and the CSV);
    ``cell_tools``: also their tool mix (the CSV).

    One read of the weekly rows gives every number and Pi's own tools; the distinct sessions and the
    other tools (few rows) take one more each. Without ``cells``, PostgreSQL groups the rows by week and
    by person in that one read, so a year of a big team is a few hundred rows rather than ten thousand."""
    span = weeks(start, end)
    first, last = span[0], span[-1]
    shared = shared_with(team)
    rows = WeekActivity.objects.filter(session_id__in=shared, week__gte=first, week__lte=last)
    columns = [
        "answers",
        "runs",
        "failed_runs",
        "reviews",
        "cost",
        "tool_calls",
        "files_changed",
        *TOOL_COLUMNS,
    ]
    sums = {f"n_{c}": Sum(c) for c in columns}
    found = (
        rows.values("week", "person_id")
        .annotate(n_sessions=Count("pk", filter=Q(answers__gt=0)), **sums)
        .values_list("week", "person_id", "n_sessions", *sums)
    )
    cells_found: dict[tuple[date, int], Cell] = {}
    cell_pi_tools: dict[tuple[date, int], tuple[int, ...]] = {}
    week_sums = {w: [0] * _WIDTH for w in span}
    person_sums: dict[int, list[Any]] = {}
    grouped = None if cells or cell_tools else _by_week_and_person(rows, columns)
    if grouped is not None:
        for week, person, values in grouped:
            if week is not None:
                week_sums[week] = values
            elif person is not None:
                person_sums[person] = values
    for week, person, *values in _plain_rows(found) if grouped is None else ():
        values = [v or 0 for v in values]
        cells_found[week, person] = cast(Cell, tuple(values[: len(NUMBERS)]))
        cell_pi_tools[week, person] = tuple(values[len(NUMBERS) :])
        into_week = week_sums[week]
        into_person = person_sums.setdefault(person, [0] * _WIDTH)
        for i, v in enumerate(values):
            into_week[i] += v
            into_person[i] += v
    by_week = {w: _numbers_with_tools(v) for w, v in week_sums.items()}
    by_person = {p: _numbers_with_tools(v) for p, v in person_sums.items()}
    # A session active in several weeks is one session of its owner over the range: one indexed probe
    # of the weekly rows per shared session, rather than a second pass over them.
    busy = WeekActivity.objects.filter(
        session_id=OuterRef("session_id"), week__gte=first, week__lte=last, answers__gt=0
    )
    distinct = dict(
        shared.filter(Exists(busy))
        .values("session__owner_id")
        .annotate(n=Count("session_id"))
        .values_list("session__owner_id", "n")
    )
    for person, numbers in by_person.items():
        numbers.sessions = distinct.get(person, 0)
    # Other tools' calls count for the session's owner, as its answers do.
    others = ToolWeek.objects.filter(session_id__in=shared, week__gte=first, week__lte=last)
    other_cells: list[tuple[Any, ...]] = []
    other_sums = None if cells or cell_tools else _tools_by_week_and_person(others)
    if other_sums is None:
        other_cells = list(
            others.values("week", "session__owner_id", "tool")
            .annotate(n=Sum("calls"))
            .values_list("week", "session__owner_id", "tool", "n")
        )
        other_sums = other_cells
    for week, owner, tool, calls in other_sums:
        if week is not None:
            by_week[week].tools[tool] += calls or 0
        if owner is not None:
            by_person.setdefault(owner, Numbers()).tools[tool] += calls or 0
    totals = Numbers()
    for numbers in by_person.values():
        totals.add(numbers)  # each session has one owner, so the people's sessions add up
    per_cell: dict[tuple[date, int], Counter[str]] | None = None
    if cell_tools:
        per_cell = defaultdict(Counter)
        for key, counts in cell_pi_tools.items():
            per_cell[key].update({tool: n for tool, n in zip(PI_TOOLS, counts, strict=True) if n})
        for week, owner, tool, calls in other_cells:
            per_cell[week, owner][tool] += calls or 0
    names = dict(get_user_model().objects.filter(pk__in=list(by_person)).values_list("pk", "username"))
    return Report(
        team=team,
        start=start,
        end=end,
        weeks=span,
        names=names,
        cells=cells_found,
        by_week=by_week,
        by_person=by_person,
        totals=totals,
        tools=[tool for tool, _ in totals.tools.most_common()],
        cell_tools=per_cell,
    )


def _by_week_and_person(
    rows: QuerySet[Any], columns: list[str]
) -> list[tuple[date | None, int | None, list[Any]]] | None:
    """The rows' numbers per week and per person in one pass (PostgreSQL's ``GROUPING SETS``): each
    result has a week or a person, the other None. None elsewhere: the caller groups per person's week."""
    if connection.vendor != "postgresql":
        return None
    sql, params = rows.values("week", "person_id", *columns).query.sql_with_params()
    sums = ", ".join(f"coalesce(sum(r.{c}), 0)" for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.week, r.person_id, count(*) FILTER (WHERE r.answers > 0), {sums} "
            f"FROM ({sql}) AS r GROUP BY GROUPING SETS ((r.week), (r.person_id))",
            params,
        )
        return [(week, person, list(values)) for week, person, *values in cursor.fetchall()]


def _tools_by_week_and_person(others: QuerySet[Any]) -> list[tuple[Any, ...]] | None:
    """Other tools' calls per week and per owner in one pass (``GROUPING SETS``): each result has a week
    or an owner, the other None; a few hundred rows where the week-by-owner cells of a year are tens of
    thousands. None off PostgreSQL."""
    if connection.vendor != "postgresql":
        return None
    sql, params = others.values("week", "session__owner_id", "tool", "calls").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.week, r.session__owner_id, r.tool, sum(r.calls) FROM ({sql}) AS r "
            "GROUP BY GROUPING SETS ((r.week, r.tool), (r.session__owner_id, r.tool))",
            params,
        )
        return cursor.fetchall()


def _plain_rows(query: QuerySet[Any]) -> Iterator[tuple[Any, ...]]:
    """The query's rows as the driver gives them: a year of a big team is ten thousand rows, and the
    ORM's per-value converters would cost more than the query. Days come as text from SQLite."""
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for week, *rest in cursor.fetchall():
            yield (date.fromisoformat(week) if isinstance(week, str) else week, *rest)


TOOL_COLUMNS = tuple(f"tool_{name}" for name in PI_TOOLS)
_WIDTH = len(NUMBERS) + len(PI_TOOLS)


def _numbers_with_tools(values: list[Any]) -> Numbers:
    numbers = Numbers(*values[: len(NUMBERS)])
    numbers.tools.update({t: n for t, n in zip(PI_TOOLS, values[len(NUMBERS) :], strict=True) if n})
    return numbers


@dataclass(frozen=True, slots=True)
class TopFile:
    path: str
    changes: int
    sessions: int


def top_files(team: Team, week: date, limit: int = 10) -> list[TopFile]:
    """Return the paths changed most in the team's shared sessions in one ISO week."""
    found = (
        FileWeek.objects.filter(session_id__in=shared_with(team), week=monday(week))
        .values("path")
        .annotate(n=Sum("changes"), s=Count("session_id"))
        .order_by("-n", "path")[:limit]
    )
    return [TopFile(path=f["path"], changes=f["n"] or 0, sessions=f["s"]) for f in found]


def week_range(week: date) -> tuple[date, date]:
    """Return the first and last day of an ISO week."""
    return monday(week), monday(week) + timedelta(days=6)
