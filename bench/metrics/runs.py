"""Runs at team scale: 50 concurrent agent runs against a provider answering in 4 s, on one worker machine.

The workers are the ones ``make run`` starts (``python -m piweb.workers``: runs on a thread pool, operations
on processes), on private queue names. A compaction requested while the runs wait must start within 1 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db, session_pk
from bench.metrics.procs import REPO_DIR, stop, wait_until

RUNS = 50
PROVIDER_SECONDS = 4.0
FINISH_LIMIT_S = 6.0
START_LIMIT_S = 1.0


@metric("team_runs")
def team_runs(ctx: Context) -> list[Result]:
    """Queue 50 runs of 4 s at once, then a compaction; time the last run's end and the compaction's start."""
    require_db(ctx)
    from django.db import connections

    from agent.models import AgentRun
    from agent.services import start_run
    from compaction_app.models import CompactionRun
    from compaction_app.services import request_compaction
    from piweb.celery import app as celery_app
    from providers.llm.testserver import ProviderServer, hang
    from providers.models import LLMProvider
    from sessions_app.services import create_session

    owner = bench_user()
    compact_pk = session_pk(ctx, "1k")
    runs_queue, ops_queue = f"bench-runs-{uuid.uuid4().hex[:8]}", f"bench-ops-{uuid.uuid4().hex[:8]}"
    celery_app.conf.task_routes = {
        "agent.run_agent": {"queue": runs_queue},
        "compaction_app.tasks.*": {"queue": ops_queue},
    }
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    env = {
        **os.environ,
        "PIWEB_RUNS_QUEUE": runs_queue,
        "PIWEB_OPERATIONS_QUEUE": ops_queue,
        "PIWEB_SUMMARIZER": "",
        "PIWEB_LOG_LEVEL": "WARNING",
    }
    log_path = ctx.data_dir / "team_runs_workers.log"
    with ProviderServer() as server, log_path.open("wb") as log:
        provider = LLMProvider.objects.create(
            name=f"bench-runs-{uuid.uuid4().hex[:6]}",
            api="anthropic-messages",
            base_url=server.url,
            model_id="claude-bench",
            provider="anthropic",
            api_key="sk-bench",
        )
        sessions = [create_session(actor=owner, cwd="/bench", name=f"run {i}") for i in range(RUNS)]
        connections.close_all()
        workers = subprocess.Popen(
            [sys.executable, "-m", "piweb.workers"], cwd=REPO_DIR, env=env, stdout=log, stderr=log
        )
        try:
            wait_until(lambda: log_path.read_bytes().count(b" ready.") >= 2, 60, "the workers", interval=0.05)
            server.enqueue(*[hang(PROVIDER_SECONDS, after=1, text="Done.") for _ in range(RUNS + 5)])
            started = time.time()
            runs = [start_run(session=s, user=owner, prompt="go", provider=provider) for s in sessions]
            queued_s = time.time() - started
            time.sleep(1.0)  # every run is waiting on the provider now
            operation = request_compaction(
                session=sessions[0].__class__.objects.get(pk=compact_pk), actor=owner
            )
            pks = [r.pk for r in runs]
            wait_until(
                lambda: AgentRun.objects.filter(pk__in=pks, finished_at__isnull=True).count() == 0,
                120,
                "the runs",
                interval=0.05,
            )
            wait_until(
                lambda: CompactionRun.objects.get(pk=operation.pk).started_at is not None,
                30,
                "compaction",
                interval=0.05,
            )
        finally:
            stop(workers, timeout=30)
            with celery_app.connection_for_write() as broker:
                for queue in (runs_queue, ops_queue):
                    broker.default_channel.queue_delete(queue)
    finished = list(AgentRun.objects.filter(pk__in=pks).values_list("status", "created_at", "finished_at"))
    # Each run from its request to its end (the requests themselves take a moment to make).
    ends = sorted((f - c).total_seconds() for _, c, f in finished)
    span = max(f for _, _, f in finished).timestamp() - started
    statuses = sorted({s for s, _, _ in finished})
    op = CompactionRun.objects.get(pk=operation.pk)
    waited = (op.started_at - op.created_at).total_seconds()
    return [
        at_most(
            f"{RUNS} concurrent runs of {PROVIDER_SECONDS:g} s, slowest request → end",
            ends[-1],
            "s",
            FINISH_LIMIT_S,
            note=(
                f"python -m piweb.workers (runs: threads; operations: processes); median "
                f"{statistics.median(ends):.2f} s, fastest {ends[0]:.2f} s; requesting all 50 took "
                f"{queued_s:.2f} s, first request → last end {span:.2f} s; statuses {statuses}; baseline: "
                f"the provider's own {PROVIDER_SECONDS:g} s"
            ),
        ),
        at_most(
            f"compaction requested during {RUNS} runs, started after",
            waited,
            "s",
            START_LIMIT_S,
            note=f"separate queue and process pool; it ended {op.status}",
        ),
    ]
