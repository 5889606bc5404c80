"""The context panel's request at the leaf of an uncompacted session: time and size, 100k against 1k.

The request is the panel's own (`GET /api/sessions/<pk>/context/?leaf=…&head=10&tail=40&llm=false&render=20`)
through Django's test client (middleware, view, serialization; no socket), signed in as the bench user,
with the shared cache emptied before each request (the first reader's cost; the note adds the cached one).
The sessions are generated without compactions, so the whole history (about 87k entries on the path at
100k) is the leaf's context. The baseline is the same page projected in full (the ``before`` parameter
takes that path), measured once on the big session in the same run.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import generate
from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric, ratio_at_most
from bench.metrics.db import load_session, session_pk

REPEAT = 9
TIME_GOAL_MS = 100.0
SIZE_GOAL_KB = 100.0
RATIO_GOAL = 2.0
PANEL = {"head": 10, "tail": 40, "llm": "false", "render": 20}


def _spec(entries: int) -> generate.SessionSpec:
    return generate.SessionSpec(entries=entries, uncompacted=True)


def _time(
    client: Any, url: str, params: dict[str, Any], repeat: int, *, cached: bool = False
) -> tuple[float, int, dict[str, Any]]:
    """Return the median milliseconds of ``repeat`` requests (after one warm-up), the body size, the body.

    Uncached by default: the shared cache is emptied before each request, so each builds the page as the
    first reader of a leaf does; ``cached`` times the readers after it."""
    from django.core.cache import caches

    answer = client.get(url, params)
    assert answer.status_code == 200, answer.content[:300]
    times: list[float] = []
    for _ in range(repeat):
        if not cached:
            caches["shared"].clear()
        started = time.perf_counter()
        answer = client.get(url, params)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(answer.content), answer.json()


@metric("context_page")
def context_page(ctx: Context) -> list[Result]:
    """The panel's context request at the leaf of a 100k uncompacted session, against a 1k one."""
    from django.test import Client

    big = 10_000 if ctx.quick else 100_000
    client = Client()
    client.force_login(bench_user())
    found: dict[int, tuple[float, int, dict[str, Any]]] = {}
    for entries in (1_000, big):
        pk = session_pk(ctx, _spec(entries))
        session = load_session(pk)
        url = f"/api/sessions/{pk}/context/"
        found[entries] = _time(client, url, {"leaf": session.leaf_entry_id, **PANEL}, REPEAT)
    ms, size, body = found[big]
    small_ms, small_size, _ = found[1_000]
    pk = session_pk(ctx, _spec(big))
    leaf = load_session(pk).leaf_entry_id
    full_params = {"leaf": leaf, **PANEL, "head": 0, "before": body["messageCount"]}
    full_ms, _, _ = _time(client, f"/api/sessions/{pk}/context/", full_params, 1)
    again_ms, _, _ = _time(
        client, f"/api/sessions/{pk}/context/", {"leaf": leaf, **PANEL}, REPEAT, cached=True
    )
    label = f"{big // 1000}k"
    note = (
        f"{body['messageCount']:,} messages in context, no compaction; median of {REPEAT}, each built "
        f"anew (cache emptied); the next readers of the leaf: {again_ms:.1f} ms; "
        f"projected in full: {full_ms:,.0f} ms"
    )
    return [
        at_most(f"context page at the leaf ({label} uncompacted)", ms, "ms", TIME_GOAL_MS, note=note),
        at_most(
            f"context page size at the leaf ({label} uncompacted)",
            size / 1024,
            "KB",
            SIZE_GOAL_KB,
            note=f"1k session: {small_size / 1024:.1f} KB; the full list of ids is not sent",
        ),
        ratio_at_most(
            f"context page {label} vs 1k uncompacted",
            ms,
            "ms",
            baseline=small_ms,
            limit=RATIO_GOAL,
            against="the 1k session's",
            note=f"1k: {small_ms:.1f} ms",
        ),
    ]


__all__ = ["context_page"]
