"""Read side of team activity: the rollup of the sessions shared with a team, by person and ISO week.

Every read joins the rollup with the team's shares at the time of asking, so a member sees exactly the
sessions every member may read through the team, and an unshared session is gone from every number.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet, Sum

from activity.domain.weeks import label, monday, weeks
from activity.models import FileWeek, ToolWeek, WeekActivity
from sessions_app.facade import SessionShare
from teams.facade import Team

__all__ = ["Numbers", "Report", "TopFile", "shared_with", "team_report", "top_files"]

NUMBERS = ("sessions", "messages", "runs", "failed_runs", "reviews", "cost", "tool_calls", "files_changed")


@dataclass(slots=True)
class Numbers:
    """One cell of the report: a person's week, a person's range, a week of the team or its whole range."""

    sessions: int = 0
    messages: int = 0
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
            "messages": self.messages,
            "runs": self.runs,
            "failedRuns": self.failed_runs,
            "reviews": self.reviews,
            "cost": round(self.cost, 6),
            "toolCalls": self.tool_calls,
            "filesChanged": self.files_changed,
            "tools": dict(self.tools.most_common()),
        }


@dataclass(slots=True)
class Report:
    team: Team
    start: date  # the first day asked for
    end: date  # the last day asked for
    weeks: list[date]
    names: dict[int, str]  # person id → username
    cells: dict[tuple[date, int], Numbers]  # (week, person) → numbers; only cells with something in them
    by_week: dict[date, Numbers]
    by_person: dict[int, Numbers]  # sessions counted once over the range
    totals: Numbers
    tools: list[str]  # every tool named in the range, most used first

    def people(self) -> list[int]:
        """Person ids, the most active first (runs, then messages), then by name."""
        return sorted(
            self.by_person,
            key=lambda p: (-self.by_person[p].runs, -self.by_person[p].messages, self.names.get(p, "")),
        )

    def rows(self) -> list[tuple[date, int, Numbers]]:
        """Per person per week, weeks in order and people by name: the CSV's rows."""
        return sorted(
            ((week, person, numbers) for (week, person), numbers in self.cells.items()),
            key=lambda r: (r[0], self.names.get(r[1], ""), r[1]),
        )

    def as_json(self) -> dict[str, Any]:
        return {
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
            "rows": [
                {"week": w.isoformat(), "person": self.names.get(p, ""), **n.as_json()}
                for w, p, n in self.rows()
            ],
        }


def shared_with(team: Team) -> QuerySet[Any]:
    """The ids of the live sessions shared with the team: what each member may read through it."""
    return SessionShare.objects.filter(team=team, session__deleted_at__isnull=True).values("session_id")


def team_report(team: Team, start: date, end: date) -> Report:
    """Return the team's activity from ``start``'s ISO week to ``end``'s: a few grouped reads."""
    span = weeks(start, end)
    first, last = span[0], span[-1]
    shared = shared_with(team)
    rows = WeekActivity.objects.filter(session_id__in=shared, week__gte=first, week__lte=last)
    cells: dict[tuple[date, int], Numbers] = {}
    grouped = rows.values("week", "person_id").annotate(
        n_sessions=Count("pk", filter=Q(messages__gt=0)),
        n_messages=Sum("messages"),
        n_runs=Sum("runs"),
        n_failed=Sum("failed_runs"),
        n_reviews=Sum("reviews"),
        n_cost=Sum("cost"),
        n_tools=Sum("tool_calls"),
        n_files=Sum("files_changed"),
    )
    for g in grouped:
        cells[g["week"], g["person_id"]] = Numbers(
            sessions=g["n_sessions"],
            messages=g["n_messages"] or 0,
            runs=g["n_runs"] or 0,
            failed_runs=g["n_failed"] or 0,
            reviews=g["n_reviews"] or 0,
            cost=g["n_cost"] or 0.0,
            tool_calls=g["n_tools"] or 0,
            files_changed=g["n_files"] or 0,
        )
    # Tool calls count for the session's owner, as its messages do.
    tools = ToolWeek.objects.filter(session_id__in=shared, week__gte=first, week__lte=last)
    for week, owner, tool, calls in (
        tools.values("week", "session__owner_id", "tool")
        .annotate(n=Sum("calls"))
        .values_list("week", "session__owner_id", "tool", "n")
    ):
        cells.setdefault((week, owner), Numbers()).tools[tool] += calls or 0
    # A session active in several weeks is one session of its owner over the range.
    distinct = dict(
        rows.filter(messages__gt=0)
        .values("person_id")
        .annotate(n=Count("session_id", distinct=True))
        .values_list("person_id", "n")
    )
    by_week = {w: Numbers() for w in span}
    by_person: dict[int, Numbers] = defaultdict(Numbers)
    totals = Numbers()
    for (week, person), numbers in cells.items():
        by_week[week].add(numbers)
        by_person[person].add(numbers, sessions=False)
        totals.add(numbers, sessions=False)
    for person, numbers in by_person.items():
        numbers.sessions = distinct.get(person, 0)
    totals.sessions = sum(distinct.values())  # each session has one owner
    names = dict(get_user_model().objects.filter(pk__in=list(by_person)).values_list("pk", "username"))
    return Report(
        team=team,
        start=start,
        end=end,
        weeks=span,
        names=names,
        cells=cells,
        by_week=by_week,
        by_person=dict(by_person),
        totals=totals,
        tools=[tool for tool, _ in totals.tools.most_common()],
    )


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
