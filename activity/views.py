"""The team activity page and its CSV: the same report, for the members of the team only."""

from __future__ import annotations

import csv
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from activity import queries, services
from activity.domain.weeks import label, span
from activity.params import BadRange, date_range
from core.errors import NotVisible
from teams.facade import Team, team_of

CSV_COLUMNS = (
    "week",
    "person",
    "sessions",
    "answers",
    "runs",
    "failed runs",
    "reviews",
    "cost",
    "tool calls",
    "files changed",
)


def _team(request: HttpRequest, team_id: int) -> Team:
    try:
        return team_of(request.user, team_id, owner=False)
    except NotVisible:
        raise Http404("Team not found") from None


@login_required
def activity_page(request: HttpRequest, team_id: int) -> HttpResponse:
    """A team's sessions, runs, reviews, failures, tool mix and cost per week and per person."""
    team = _team(request, team_id)
    error = ""
    try:
        start, end = date_range(request.GET)
    except BadRange as e:
        error = str(e)
        start, end = span(timezone.now().date())
    report = queries.team_report(team, start, end, cells=False)
    body = report.as_json(rows=False)
    del body["people"]  # the charts draw the weeks; the people are the page's table
    # The table's cells as text: two hundred people's rows render as plain strings.
    people = [
        (
            report.names.get(p, ""),
            *(str(v) for v in (n.sessions, n.answers, n.runs, n.failed_runs, n.reviews, n.tool_calls)),
            str(n.files_changed),
            f"${n.cost:,.2f}",
            ", ".join(f"{tool} {calls}" for tool, calls in n.tools.most_common(3)),
        )
        for p in report.people()
        for n in (report.by_person[p],)
    ]
    query = f"from={start.isoformat()}&to={end.isoformat()}"
    context: dict[str, Any] = {
        "team": team,
        "report": report,
        "people": people,
        "first": label(report.weeks[0]),
        "last": label(report.weeks[-1]),
        "error": error,
        "query": query,
        "digest": services.digest_wanted(request.user, team),
        "config": {"team": team.pk, "report": body},
    }
    return render(request, "activity/activity.html", context)


@login_required
def activity_csv(request: HttpRequest, team_id: int) -> HttpResponse:
    """The page's numbers per person per week, with one column per tool, as the page's range."""
    team = _team(request, team_id)
    try:
        start, end = date_range(request.GET)
    except BadRange as e:
        return HttpResponse(str(e), status=400, content_type="text/plain; charset=utf-8")
    report = queries.team_report(team, start, end, cell_tools=True)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"activity-team-{team.pk}-{start.isoformat()}-{end.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    writer.writerow([*CSV_COLUMNS, *(f"tool {t}" for t in report.tools)])
    for week, person, n in report.rows():
        writer.writerow(
            [
                week.isoformat(),
                _cell(report.names.get(person, "")),
                n.sessions,
                n.answers,
                n.runs,
                n.failed_runs,
                n.reviews,
                f"{n.cost:.6f}",
                n.tool_calls,
                n.files_changed,
                *(n.tools.get(t, 0) for t in report.tools),
            ]
        )
    return response


def _cell(text: str) -> str:
    # A spreadsheet runs a cell starting with one of these as a formula.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text
