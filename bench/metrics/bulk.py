"""Search right after a bulk import: 2,001 small sessions (about 140k entries), imported one by one as
``manage.py import_pi_sessions`` or a first ``piweb-sync`` of a whole ``~/.pi/agent/sessions`` would,
then searched at once through ``GET /api/search/`` for the team bench's query kinds, and by work
("sessions that touched this path": an exact path, a folder, a glob, a tool with a path, a command), which
the index of work kept at import time answers.

The sessions belong to the user ``bench-bulk`` and are imported fresh every run (the planner statistics
right after the import are the point). Twenty generated files of 70 entries are cycled, each import with
a header id of its own.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import generate
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import _RenamedLines, require_db
from bench.metrics.team import QUERIES, RARE_PHRASE

BULK_USER = "bench-bulk"
BULK_SESSIONS = 2_001
BULK_ENTRIES = 45  # the generator adds tool results: about 70 stored entries per session
BULK_FILES = 20
GOAL_MS = 100


def _import_all(ctx: Context, count: int) -> tuple[Any, float]:
    """Import ``count`` small sessions for the bulk user (its old ones deleted first); return (user, s)."""
    from django.contrib.auth import get_user_model

    from sessions_app.models import ChatSession
    from sessions_app.services import append_entries, import_stream

    owner, _ = get_user_model().objects.get_or_create(username=BULK_USER)
    ChatSession.objects.filter(owner=owner).delete()
    files = [
        ctx.session(generate.SessionSpec(entries=BULK_ENTRIES, seed=generate.DEFAULT_SEED + 500 + i))
        for i in range(BULK_FILES)
    ]
    started = time.perf_counter()
    for index in range(count):
        source = files[index % len(files)]
        name = f"bulk-{index}-{source.path.name}"
        result = import_stream(actor=owner, stream=_RenamedLines(source.path, name), filename=name)  # type: ignore[arg-type]
        if index % 400 == 0:  # a few sessions hold the rare phrase
            text = f"Before the {RARE_PHRASE} meeting, list what changed"
            message = {"role": "user", "content": text, "timestamp": int(time.time() * 1000)}
            entries = [{"type": "message", "message": message}]
            append_entries(session=result.session, entries=entries, actor=owner)
    return owner, time.perf_counter() - started


def _api_search(client: Any, q: str) -> float:
    t0 = time.perf_counter()
    response = client.get("/api/search/", {"q": q}, secure=True)
    elapsed = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"search {q!r} answered {response.status_code}")
    return elapsed


def _work_searches(client: Any, owner: Any, *, quick: bool) -> tuple[float, str]:
    """Time the search by work's query kinds; return (slowest median, note)."""
    from sessions_app.models import ToolUse

    path = (
        ToolUse.objects.filter(session__owner=owner, tool="edit", result_seq__isnull=False)
        .order_by("id")
        .values_list("path", flat=True)
        .first()
    ) or "src/app.py"
    folder = path.rsplit("/", 1)[0] + "/"
    queries = [
        ("exact", f"path:{path}"),
        ("folder", f"path:{folder}"),
        ("glob", "path:src/**/*_7.py"),
        ("tool and path", f"tool:edit path:{path}"),
        ("command", "cmd:pytest"),
    ]
    parts: list[str] = []
    worst = 0.0
    for label, q in queries:
        first = _api_search(client, q)
        samples = [_api_search(client, q) for _ in range(3 if quick else 5)]
        median = statistics.median(samples)
        parts.append(f"{label} {q}: {median:.0f} ms (first {first:.0f})")
        worst = max(worst, median)
    rows = ToolUse.objects.filter(session__owner=owner).count()
    return worst, "; ".join(parts) + f"; {rows:,} indexed tool calls; GET /api/search/ in process"


@metric("search_after_import")
def search_after_import(ctx: Context) -> list[Result]:
    """Import 2,001 small sessions one by one, then search them at once, as GET /api/search/ does."""
    require_db(ctx)
    from rest_framework.test import APIClient

    from sessions_app.models import Entry

    count = 401 if ctx.quick else BULK_SESSIONS
    owner, import_s = _import_all(ctx, count)
    entries = Entry.objects.filter(session__owner=owner).count()
    client = APIClient()
    client.force_authenticate(owner)
    parts: list[str] = []
    worst = 0.0
    first_worst = 0.0
    for label, q in QUERIES:
        first = _api_search(client, q)  # the very first search after the import
        samples = [_api_search(client, q) for _ in range(3 if ctx.quick else 5)]
        median = statistics.median(samples)
        parts.append(f"{label} {q}: {median:.0f} ms (first {first:.0f})")
        worst = max(worst, median)
        first_worst = max(first_worst, first)
    work_worst, work_note = _work_searches(client, owner, quick=ctx.quick)
    return [
        at_most(
            f"sessions that touched a path, right after importing {count:,} sessions "
            f"({entries / 1000:.0f}k entries), slowest query kind, median",
            work_worst,
            "ms",
            GOAL_MS,
            note=work_note,
        ),
        at_most(
            f"search right after importing {count:,} sessions ({entries / 1000:.0f}k entries), "
            "slowest query kind, median",
            worst,
            "ms",
            GOAL_MS,
            note="; ".join(parts)
            + f"; slowest first search {first_worst:.0f} ms; {count} imports of {BULK_ENTRIES}-entry files "
            f"took {import_s:.0f} s; GET /api/search/ in process (test client), the user's every session",
        ),
    ]
