"""A year of a 200-person team's activity: the team activity page and its REST answer.

The data goes straight into the tables the page reads, by bulk inserts: 200 members, each owning 20
sessions shared with the team (and 10 they keep to themselves), each session busy in a few weeks of the
year with its runs, tool mix and files; teammates' runs and reviews on others' sessions; and as many rows
again in another team, which the page must not read. Kept between runs (rebuilt when the generator's
version changes). The page and the answer are timed over the default range (12 weeks) and a whole year.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from datetime import date, timedelta
from typing import Any

from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db

VERSION = 3
TEAM = f"bench-activity-v{VERSION}"
OTHER_TEAM = f"bench-activity-other-v{VERSION}"
PEOPLE = 200
SHARED_PER_PERSON = 20
PRIVATE_PER_PERSON = 10
WEEKS = 52
WEEKS_PER_SESSION = (3, 12)  # a session is busy in this many weeks of the year
TOOLS = ("read", "edit", "write", "bash", "grep", "find", "ls", "web_search", "deploy")
GOAL_MS = 200.0


def _people(prefix: str) -> list[Any]:
    from django.contrib.auth import get_user_model

    model = get_user_model()
    names = [f"{prefix}-{i:03d}" for i in range(PEOPLE)]
    existing = set(model.objects.filter(username__in=names).values_list("username", flat=True))
    model.objects.bulk_create([model(username=n) for n in names if n not in existing])
    return list(model.objects.filter(username__in=names).order_by("username"))


def _generate(team_name: str, prefix: str, *, seed: int, end: date) -> int:
    """Create the team, its members, their sessions and a year of rollup rows; return the team's pk."""
    from activity.models import PI_TOOLS, FileWeek, ToolWeek, WeekActivity
    from sessions_app.models import ChatSession, SessionShare
    from teams.models import Team, TeamMembership

    rng = random.Random(seed)
    people = _people(prefix)
    team = Team.objects.create(name=team_name)
    TeamMembership.objects.bulk_create(
        [TeamMembership(team=team, user=p, role=TeamMembership.Role.EDITOR) for p in people]
    )
    sessions = ChatSession.objects.bulk_create(
        [
            ChatSession(owner=p, pi_id=f"{team_name}-{p.pk}-{i}", header_raw="{}", cwd="/w", name=f"task {i}")
            for p in people
            for i in range(SHARED_PER_PERSON + PRIVATE_PER_PERSON)
        ],
        batch_size=5000,
    )
    shared = [
        s for i, s in enumerate(sessions) if i % (SHARED_PER_PERSON + PRIVATE_PER_PERSON) < SHARED_PER_PERSON
    ]
    SessionShare.objects.bulk_create([SessionShare(session=s, team=team) for s in shared], batch_size=5000)
    first = end - timedelta(days=end.weekday()) - timedelta(weeks=WEEKS - 1)
    activity: list[WeekActivity] = []
    tools: list[ToolWeek] = []
    files: list[FileWeek] = []
    for session in sessions:
        busy = sorted(rng.sample(range(WEEKS), rng.randint(*WEEKS_PER_SESSION)))
        for index in busy:
            week = first + timedelta(weeks=index)
            calls = {t: rng.randint(1, 40) for t in rng.sample(TOOLS, rng.randint(2, 5))}
            runs = rng.randint(0, 6)
            activity.append(
                WeekActivity(
                    session_id=session.pk,
                    week=week,
                    person_id=session.owner_id,
                    answers=rng.randint(5, 200),
                    runs=runs,
                    failed_runs=rng.randint(0, runs // 3) if runs else 0,
                    cost=rng.random() * 8,
                    tool_calls=sum(calls.values()),
                    files_changed=rng.randint(0, 12),
                    **{f"tool_{t}": n for t, n in calls.items() if t in PI_TOOLS},
                )
            )
            if rng.random() < 0.3:  # a teammate ran or reviewed here too
                mate = people[rng.randrange(PEOPLE)]
                if mate.pk != session.owner_id:
                    activity.append(
                        WeekActivity(
                            session_id=session.pk,
                            week=week,
                            person_id=mate.pk,
                            runs=rng.randint(0, 3),
                            reviews=rng.randint(1, 3),
                        )
                    )
            tools += [
                ToolWeek(session_id=session.pk, week=week, tool=t, calls=n)
                for t, n in calls.items()
                if t not in PI_TOOLS
            ]
            files += [
                FileWeek(
                    session_id=session.pk,
                    week=week,
                    digest=f"{session.pk:x}{index:02x}{k}",
                    path=f"src/m{k}.py",
                    changes=rng.randint(1, 9),
                )
                for k in range(rng.randint(0, 4))
            ]
    WeekActivity.objects.bulk_create(activity, batch_size=10_000)
    ToolWeek.objects.bulk_create(tools, batch_size=10_000)
    FileWeek.objects.bulk_create(files, batch_size=10_000)
    return int(team.pk)


def _team(ctx: Context) -> tuple[int, int, dict[str, int]]:
    """Return the team's pk, one member's pk and the row counts, generating the data when missing."""
    from django.db import connection

    from activity.models import ToolWeek, WeekActivity
    from teams.models import Team, TeamMembership

    require_db(ctx)
    end = date.today()
    found = Team.objects.filter(name=TEAM).first()
    started = time.perf_counter()
    if found is None:
        Team.objects.filter(name=OTHER_TEAM).delete()
        _generate(OTHER_TEAM, f"bench-other-v{VERSION}", seed=2, end=end)
        pk = _generate(TEAM, f"bench-member-v{VERSION}", seed=1, end=end)
        with connection.cursor() as cursor:
            tables = ("activity_weekactivity", "activity_toolweek", "sessions_app_sessionshare")
            for table in (*tables, "sessions_app_chatsession"):
                cursor.execute(f"ANALYZE {table}")
        print(f"bench: generated a year of team activity in {time.perf_counter() - started:.0f} s")
    else:
        pk = found.pk
    member = (
        TeamMembership.objects.filter(team_id=pk).order_by("pk").values_list("user_id", flat=True).first()
    )
    assert member is not None
    counts = {"activity": WeekActivity.objects.count(), "tools": ToolWeek.objects.count()}
    return pk, member, counts


def _percentiles(fn: Any, repeat: int) -> tuple[float, float]:
    fn()  # warm
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples), p95


def _plans(client: Any, url: str) -> str:
    """How PostgreSQL reads the rollup for the page: each query's scans of the activity tables."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get(url, secure=True)
    found = []
    for query in captured.captured_queries:
        sql = query["sql"]
        if not sql.startswith("SELECT") or "activity_" not in sql:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
            plan = cursor.fetchone()[0]
        plan = plan if isinstance(plan, list) else json.loads(plan)
        scans: list[str] = []
        _scans(plan[0]["Plan"], scans)
        found.append(", ".join(scans))
    return " | ".join(found)


def _scans(node: dict[str, Any], into: list[str]) -> None:
    if str(node.get("Relation Name", "")).startswith("activity_"):
        into.append(f"{node['Node Type']} on {node['Relation Name']}")
    for child in node.get("Plans", []):
        _scans(child, into)


@metric("team_activity")
def team_activity(ctx: Context) -> list[Result]:
    """Time the team activity page and GET /api/teams/<id>/activity/ over 12 weeks and over a year."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    team, member, counts = _team(ctx)
    client = Client()
    client.force_login(get_user_model().objects.get(pk=member))
    today = date.today()
    year = {"from": (today - timedelta(weeks=WEEKS - 1)).isoformat(), "to": today.isoformat()}
    page, api = f"/teams/{team}/activity/", f"/api/teams/{team}/activity/"
    for url, params in ((page, {}), (api, year)):
        answer = client.get(url, params, secure=True)
        if answer.status_code != 200:
            raise RuntimeError(f"GET {url} answered {answer.status_code}")
    body = client.get(api, year, secure=True).json()
    repeat = 10 if ctx.quick else 40
    timings = {
        (name, label): _percentiles(lambda u=url, p=params: client.get(u, p, secure=True), repeat)
        for name, url in (("page", page), ("REST", api))
        for label, params in (("12 weeks", {}), ("a year", year))
    }
    parts = [
        f"{name} over {label}: p50 {p50:.0f} ms, p95 {p95:.0f} ms"
        for (name, label), (p50, p95) in timings.items()
    ]
    data = (
        f"{PEOPLE} people, {body['totals']['sessions']} sessions active in the year, "
        f"{counts['activity']} weekly rows and {counts['tools']} rows of extensions' tools in all "
        "(half in another team)"
    )

    plans = _plans(client, page)
    # Wall times on a shared machine: the load says how much of them was waiting for a core.
    load = "load average {:.1f} {:.1f} {:.1f} on {} cores".format(*os.getloadavg(), os.cpu_count())

    def slowest(label: str) -> float:
        return max(p95 for (_, of), (_, p95) in timings.items() if of == label)

    return [
        at_most(
            "team activity page and REST answer as opened (12 weeks), a year of a 200-person team (p95)",
            slowest("12 weeks"),
            "ms",
            GOAL_MS,
            note=f"{'; '.join(parts)}; {data}; plans of the page's reads: {plans}",
        ),
        at_most(
            "team activity page and REST answer over the whole year (p95)",
            slowest("a year"),
            "ms",
            GOAL_MS,
            note=f"the same data asked for all 52 weeks at once; {load}",
        ),
    ]
