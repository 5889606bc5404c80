"""The session list filtered over 10,000 sessions: any three structured filters plus words.

A team of 100 people owning 100 sessions each, all shared with the team, goes straight into the tables
the filters read, by bulk inserts: sessions, shares, tool uses, day totals per model, label and
compaction entries, runs. Kept between runs (rebuilt when the generator's version changes). One member
opens the list page (`/`) with three filters drawn at random and a word, as signed in through the
browser; each combination is timed once after a warm-up, p50 and p95 reported.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import date, timedelta
from typing import Any

from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db

VERSION = 1
TEAM = f"bench-filters-v{VERSION}"
PEOPLE = 100
PER_PERSON = 100
TOOLS = ("read", "edit", "write", "bash", "grep", "find", "ls")
MODELS = ("anthropic/claude-a", "anthropic/claude-b", "openai/gpt-c", "google/gem-d")
WORDS = ("parser", "billing", "deploy", "search", "cache", "login", "export", "invoice")
LABELS = ("release", "bug", "idea")
COMBINATIONS = 60
GOAL_MS = 100.0


def _generate(rng: random.Random) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agent.models import AgentRun
    from costs.models import UsageDay
    from sessions_app.models import ChatSession, Entry, SessionShare, ToolUse
    from teams.models import Team, TeamMembership

    model = get_user_model()
    names = [f"bench-filters-{i:03d}" for i in range(PEOPLE)]
    model.objects.bulk_create([model(username=n) for n in names], ignore_conflicts=True)
    people = list(model.objects.filter(username__in=names).order_by("username"))
    team = Team.objects.create(name=TEAM)
    TeamMembership.objects.bulk_create([TeamMembership(team=team, user=p, role="editor") for p in people])
    today = date.today()
    sessions = ChatSession.objects.bulk_create(
        [
            ChatSession(
                owner=p,
                pi_id=f"{TEAM}-{p.pk}-{i}",
                header_raw="{}",
                cwd=f"/work/{rng.choice(WORDS)}",
                name=f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}",
                entry_count=4,
                next_seq=4,
            )
            for p in people
            for i in range(PER_PERSON)
        ],
        batch_size=5000,
    )
    # Spread last activity over a year, as a team's list is.
    for session in sessions:
        session.updated_at = session.created_at - timedelta(days=rng.randint(0, 365))
    ChatSession.objects.bulk_update(sessions, ["updated_at"], batch_size=5000)
    SessionShare.objects.bulk_create([SessionShare(session=s, team=team) for s in sessions], batch_size=5000)
    uses: list[ToolUse] = []
    days: list[UsageDay] = []
    entries: list[Entry] = []
    runs: list[AgentRun] = []
    for session in sessions:
        for n, tool in enumerate(rng.sample(TOOLS, rng.randint(1, 5))):
            uses.append(ToolUse(session=session, call_seq=n, call_id=f"c{n}", tool=tool, path="src/a.py"))
        for model_name in rng.sample(MODELS, rng.randint(1, 2)):
            days.append(
                UsageDay(session=session, day=today, model=model_name, cost=rng.random() * 5, messages=3)
            )
        seq = 0
        if rng.random() < 0.2:
            label = rng.choice(LABELS)
            raw = f'{{"type":"label","id":"l{seq}","parentId":null,"targetId":"x","label":"{label}"}}'
            entries.append(Entry(session=session, seq=seq, entry_id=f"l{seq}", type="label", raw=raw))
            seq += 1
        if rng.random() < 0.1:
            raw = '{"type":"compaction","id":"k","parentId":null,"summary":"s"}'
            entries.append(Entry(session=session, seq=seq, entry_id="k", type="compaction", raw=raw))
        if rng.random() < 0.05:
            status = rng.choice(("running", "failed", "succeeded"))
            runs.append(
                AgentRun(session=session, requested_by_id=session.owner_id, prompt="go", status=status)
            )
    ToolUse.objects.bulk_create(uses, batch_size=10_000)
    UsageDay.objects.bulk_create(days, batch_size=10_000)
    Entry.objects.bulk_create(entries, batch_size=10_000)
    AgentRun.objects.bulk_create(runs, batch_size=10_000)
    # What autovacuum does soon after such a load: without statistics the planner takes these tables
    # for empty and nests loops over them.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return int(team.pk)


def _combination(rng: random.Random, team: int, people: list[str]) -> dict[str, str]:
    pool: dict[str, Any] = {
        "team": lambda: str(team),
        "owner": lambda: rng.choice(people),
        "tool": lambda: rng.choice(TOOLS),
        "model": lambda: rng.choice(MODELS).split("/")[1],
        "provider": lambda: rng.choice(MODELS).split("/")[0],
        "cost_min": lambda: f"{rng.random() * 3:.2f}",
        "cost_max": lambda: f"{1 + rng.random() * 4:.2f}",
        "label": lambda: rng.choice(LABELS),
        "state": lambda: rng.choice(("compacted", "running", "failed")),
        "after": lambda: (date.today() - timedelta(days=rng.randint(10, 300))).isoformat(),
    }
    chosen = rng.sample(sorted(pool), 3)
    return {"q": rng.choice(WORDS), **{name: pool[name]() for name in chosen}}


@metric("session_filters")
def session_filters(ctx: Context) -> list[Result]:
    """The session list page with three filters and a word, over a team's 10,000 sessions."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from teams.models import Team

    require_db(ctx)
    rng = random.Random(7)
    found = Team.objects.filter(name=TEAM).first()
    started = time.perf_counter()
    team = found.pk if found is not None else _generate(rng)
    made = time.perf_counter() - started
    people = [f"bench-filters-{i:03d}" for i in range(PEOPLE)]
    viewer = get_user_model().objects.get(username=people[0])
    client = Client()
    client.force_login(viewer)
    combos = [_combination(rng, team, people) for _ in range(COMBINATIONS)]
    for params in combos[:5]:  # warm: templates, the connection, the filters' choices
        assert client.get("/", params).status_code == 200
    times = []
    slowest = ("", 0.0)
    for params in combos:
        t0 = time.perf_counter()
        response = client.get("/", params)
        ms = (time.perf_counter() - t0) * 1000
        assert response.status_code == 200, response.content[:300]
        times.append(ms)
        if ms > slowest[1]:
            slowest = (" ".join(f"{k}={v}" for k, v in params.items()), ms)
    times.sort()
    p50 = statistics.median(times)
    p95 = times[int(0.95 * (len(times) - 1))]
    how = "generated" if found is None else "kept from an earlier run"
    return [
        at_most(
            "session list: three filters and a word over 10,000 sessions (p95)",
            p95,
            "ms",
            GOAL_MS,
            note=(
                f"p50 {p50:.0f} ms over {len(times)} random combinations, the whole page (query, badges, "
                f"filter bar, rendering) through Django's test client; slowest: {slowest[0]} "
                f"({slowest[1]:.0f} ms); {PEOPLE * PER_PERSON:,} sessions {how} in {made:.0f} s"
            ),
        )
    ]
