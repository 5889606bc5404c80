"""Cost on a big session: the session page's cost request, my usage, and what keeping costs adds to an import.

The cost of a branch is one indexed read of the nearest assistant message's path sums, so the request
must not grow with the session: it is timed on the biggest session of the run against a full recount of
the same session's assistant messages (what a page would pay without the kept sums).
"""

from __future__ import annotations

import time

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric, ratio_at_most
from bench.metrics.db import big_size, load_session, session_pk
from bench.metrics.inmemory import median_ms


@metric("costs")
def costs(ctx: Context) -> list[Result]:
    """Time GET /cost/ at the biggest session's leaf, GET /usage/, and the cost recording of an import."""
    from django.db import connection, transaction
    from django.test import Client

    from costs.models import MessageCost, UsageDay
    from costs.recording import record
    from sessions_app.models import Entry

    size = big_size(ctx)
    pk = session_pk(ctx, size)
    session = load_session(pk)
    client = Client()
    client.force_login(bench_user())
    assistants = list(
        Entry.objects.filter(session=session, role="assistant", type="message")
        .order_by("-seq")
        .values_list("entry_id", flat=True)[:50]
    )
    cost_url = f"/api/sessions/{pk}/cost/?entries={','.join(assistants)}"
    answer = client.get(cost_url, secure=True)
    if answer.status_code != 200:
        raise RuntimeError(f"GET cost answered {answer.status_code}")
    body = answer.json()
    repeat = 5 if ctx.quick else 20
    cost_ms = median_ms(lambda: client.get(cost_url, secure=True), repeat=repeat)
    usage_ms = median_ms(lambda: client.get("/api/usage/", secure=True), repeat=repeat)
    recount_ms = median_ms(lambda: _recount(connection, pk), repeat=3)

    # What keeping costs adds to an import of the whole session: its receiver over every line, rolled back.
    with transaction.atomic():
        MessageCost.objects.filter(session=session).delete()
        UsageDay.objects.filter(session=session).delete()
        started = time.perf_counter()
        record(None, session=session, first_seq=0, last_seq=session.next_seq - 1, rows=None)
        recorded_s = time.perf_counter() - started
        transaction.set_rollback(True)
    with_ms, without_ms = _append_ms(repeat=40 if ctx.quick else 200)
    messages = body["session"]["messages"]
    return [
        ratio_at_most(
            "append one assistant message, cost recorded",
            with_ms,
            "ms",
            baseline=without_ms,
            limit=1.5,
            against="the same append without the cost receiver",
            note="median of alternating rounds on one session; the audit's usage rollup runs in both",
        ),
        at_most(
            f"cost of branch, session and abandoned, {size} session (GET /cost/)",
            cost_ms,
            "ms",
            100,
            note=f"{messages} assistant messages, branch ${body['branch']['cost']:.2f} of "
            f"${body['session']['cost']:.2f}, 50 cards' own costs; recounting the session's assistant "
            f"messages instead takes {recount_ms:.0f} ms; test client in process",
        ),
        at_most(
            "my usage per day and model (GET /usage/)",
            usage_ms,
            "ms",
            100,
            note="every bench session of the run; test client in process",
        ),
        at_most(
            f"cost recording of a whole {size} import",
            recorded_s,
            "s",
            5,
            note=f"{messages} assistant messages priced and their path sums kept, inside the import's "
            "transaction",
        ),
    ]


def _append_ms(*, repeat: int) -> tuple[float, float]:
    """Return the median ms of appending one priced assistant answer with and without cost recording."""
    import statistics

    from costs.recording import ACTS_ON, record
    from sessions_app.services import append_entries, create_session
    from sessions_app.signals import connect_entries_stored, entries_stored

    user = bench_user()
    session = create_session(actor=user, cwd="/bench/cost-append")
    answer = {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "provider": "bench",
            "model": "m",
            "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.01}},
            "stopReason": "stop",
            "timestamp": 1,
        },
    }
    samples: dict[bool, list[float]] = {True: [], False: []}
    try:
        for i in range(repeat):
            recording = i % 2 == 0
            if not recording:
                entries_stored.disconnect(dispatch_uid="piweb-costs")
            started = time.perf_counter()
            append_entries(session=session, actor=user, entries=[answer])
            samples[recording].append((time.perf_counter() - started) * 1000)
            if not recording:
                connect_entries_stored(record, dispatch_uid="piweb-costs", acts_on=ACTS_ON)
    finally:
        connect_entries_stored(record, dispatch_uid="piweb-costs", acts_on=ACTS_ON)
    return statistics.median(samples[True]), statistics.median(samples[False])


def _recount(connection: object, pk: int) -> None:
    from sessions_app.models import Entry

    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(
            "SELECT sum((raw::jsonb #>> '{message,usage,cost,total}')::numeric) "
            f"FROM {Entry._meta.db_table} WHERE session_id = %s AND type = 'message' AND role = 'assistant'",
            [pk],
        )
        cursor.fetchone()
