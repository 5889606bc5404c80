"""The filtered session list over 10,000 sessions: random combinations of three filters plus text.

The sessions and their index rows (shares, tool uses, usage per model, label, compaction and message
entries, runs) are bulk-inserted, the way the rows would stand after imports, for a team whose members
read most of them. Each sample is the list page's query: the count and the first page, as the viewer.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db

SESSIONS = 10_000
TOOLS = ["bash", "read", "edit", "write", "grep"]
MODELS = ["anthropic/claude-sonnet", "anthropic/claude-opus", "openai/gpt-5", "google/gemini-pro"]
LABELS = ["keep", "review", "bug", "idea"]
WORDS = ["parser", "migration", "deploy", "tests", "cache", "login"]


def _populate(owner: Any, viewer: Any, others: list[Any]) -> None:
    """Bulk-insert the sessions, their index rows and their entries."""
    import json
    from decimal import Decimal

    from django.db import connection
    from django.utils import timezone

    from agent.models import AgentRun
    from audit.models import SessionUsage
    from sessions_app.models import ChatSession, Entry, EntryAuthor, SessionShare, ToolUse
    from teams.models import Team, TeamMembership

    ChatSession.objects.filter(pi_id__startswith="bench-filter-").delete()  # a previous run's
    rng = random.Random(7)
    team, _ = Team.objects.get_or_create(name="bench-filters")
    for member in (owner, viewer, *others):
        TeamMembership.objects.get_or_create(team=team, user=member, defaults={"role": "member"})
    owners = [owner, *others]
    now = timezone.now()
    sessions = ChatSession.objects.bulk_create(
        [
            ChatSession(
                owner=owners[i % len(owners)],
                pi_id=f"bench-filter-{i}",
                name=f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}",
                cwd=f"/work/p{i % 50}",
                header_raw="{}",
                entry_count=3,
                message_count=2,
            )
            for i in range(SESSIONS)
        ],
        batch_size=2000,
    )
    # Spread creation and activity over a year (auto_now columns are set after the insert).
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE sessions_app_chatsession SET created_at = %s - (id %% 365) * interval '1 day', "
            "updated_at = %s - (id %% 180) * interval '1 day' WHERE pi_id LIKE 'bench-filter-%%'",
            [now, now],
        )
    # Most sessions are shared with the team; the viewer owns none, so a tenth stays out of reach.
    SessionShare.objects.bulk_create(
        [SessionShare(session=s, team=team) for i, s in enumerate(sessions) if i % 10], batch_size=5000
    )
    ToolUse.objects.bulk_create(
        [
            ToolUse(session=s, call_seq=n, call_id=f"c{n}", tool=tool, path=f"src/f{n}.py")
            for s in sessions
            for n, tool in enumerate(rng.sample(TOOLS, rng.randint(1, 3)))
        ],
        batch_size=5000,
    )
    SessionUsage.objects.bulk_create(
        [
            SessionUsage(session=s, model=model, messages=1, cost=Decimal(rng.randint(0, 500)) / 100)
            for s in sessions
            for model in rng.sample(MODELS, rng.randint(1, 2))
        ],
        batch_size=5000,
    )
    authors = {
        u.pk: EntryAuthor.objects.get_or_create(
            key=f"bench-filter-{u.pk}", defaults={"kind": "user", "user": u}
        )[0]
        for u in owners
    }
    entries: list[Entry] = []
    for i, s in enumerate(sessions):
        author = authors[owners[(i + rng.randint(0, 1)) % len(owners)].pk]
        message = {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "message": {"role": "user", "content": "go"},
        }
        entries.append(Entry(session=s, seq=0, entry_id="u1", type="message", role="user",
                             raw=json.dumps(message), author=author, search_text="go"))  # fmt: skip
        if i % 3 == 0:
            label = {
                "type": "label",
                "id": "l1",
                "parentId": "u1",
                "targetId": "u1",
                "label": rng.choice(LABELS),
            }
            entries.append(
                Entry(session=s, seq=1, entry_id="l1", type="label", raw=json.dumps(label), author=author)
            )
        if i % 5 == 0:
            entries.append(Entry(session=s, seq=2, entry_id="k1", type="compaction", raw="{}", author=author))
    Entry.objects.bulk_create(entries, batch_size=5000)
    AgentRun.objects.bulk_create(
        [AgentRun(session=s, prompt="go", status=AgentRun.Status.FAILED) for s in sessions[::40]]
    )
    with connection.cursor() as cursor:
        for table in ("sessions_app_chatsession", "sessions_app_sessionshare", "sessions_app_tooluse",
                      "audit_sessionusage", "sessions_app_entry", "agent_agentrun"):  # fmt: skip
            cursor.execute(f"ANALYZE {table}")


def _combination(rng: random.Random, viewer: Any, others: list[Any]) -> dict[str, str]:
    choices: list[tuple[str, str]] = [
        ("team", "bench-filters"),
        ("owner", rng.choice(others).username),
        ("author", rng.choice(others).username),
        ("model", rng.choice(MODELS)),
        ("provider", rng.choice(MODELS).split("/")[0]),
        ("cost_min", str(rng.randint(0, 3))),
        ("cost_max", str(rng.randint(2, 5))),
        ("tool", rng.choice(TOOLS)),
        ("label", rng.choice(LABELS)),
        ("created_after", f"2026-0{rng.randint(1, 9)}-01"),
        ("updated_before", f"2026-{rng.randint(10, 12)}-01"),
        ("state", rng.choice(["compacted", "failed"])),
    ]
    return dict(rng.sample(choices, 3))


@metric("session_filters")
def session_filters(ctx: Context) -> list[Result]:
    """p50/p95 of the filtered list page's query, three random filters plus text, over 10k sessions."""
    require_db(ctx)
    from django.contrib.auth import get_user_model
    from django.core.paginator import Paginator
    from django.http import QueryDict

    from sessions_app.views import PAGE_SIZE, search_sessions

    users = get_user_model().objects
    owner = bench_user()
    others = [users.get_or_create(username=f"bench-filters-{n}")[0] for n in range(4)]
    viewer = users.get_or_create(username="bench-filters-viewer")[0]
    _populate(owner, viewer, others)
    rng = random.Random(11)
    samples: list[float] = []
    for _ in range(40 if ctx.quick else 200):
        params = QueryDict(mutable=True)
        params.update(_combination(rng, viewer, others))
        text = rng.choice(WORDS)
        started = time.perf_counter()
        query = search_sessions(viewer, text=text, scope="all", sort="recent", params=params)
        page = Paginator(query, PAGE_SIZE).get_page(1)
        list(page.object_list)
        samples.append((time.perf_counter() - started) * 1000)
    p50 = statistics.median(samples)
    p95 = statistics.quantiles(samples, n=20, method="inclusive")[18]
    note = f"{SESSIONS:,} sessions, 9 in 10 readable through a team; count and first page, as the viewer"
    return [
        at_most("filtered session list, 3 filters + text, p50", p50, "ms", 100, note=note),
        at_most("filtered session list, 3 filters + text, p95", p95, "ms", 100, note=note),
    ]
