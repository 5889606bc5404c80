"""Runs and operations have their own queues and workers: a compaction never waits behind busy runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from agent.models import AgentRun
from agent.services import abort_run, start_run
from compaction_app.models import CompactionRun
from compaction_app.services import request_compaction
from core.actors import SystemActor
from piweb import workers
from piweb.celery import app as celery_app
from providers.llm.testserver import ProviderServer, hang
from providers.models import LLMProvider
from tests.factories import conversation, store
from tests.procs import database_url, wait_until

from .test_worker_kill import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not str(django_settings.CELERY_BROKER_URL).startswith("redis"), reason="needs the Redis broker"
    ),
]


def test_tasks_are_routed_to_the_runs_and_operations_queues() -> None:
    route = celery_app.amqp.router.route
    assert route({}, "agent.run_agent")["queue"].name == workers.RUNS_QUEUE
    for task in ("compaction_app.tasks.run_compaction", "compaction_app.tasks.run_branch_summary"):
        assert route({}, task)["queue"].name == workers.OPERATIONS_QUEUE
    commands = workers.worker_commands({"REDIS_URL": "redis://127.0.0.1:6379/0"})
    consumed = {c[c.index("-Q") + 1] for c in commands}
    assert consumed == {"runs", "operations,celery"}
    assert "--pool=threads" in commands[0] and "--pool=prefork" in commands[1]
    # Without Redis (make run's embedded broker) runs take processes, so one Ctrl-C hands them back.
    assert "--pool=prefork" in workers.worker_commands({})[0]


@pytest.fixture
def queues(tmp_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Private queue names for this test, and ``start()`` for the workers of ``python -m piweb.workers``."""
    runs, operations = f"runs-{uuid.uuid4().hex}", f"ops-{uuid.uuid4().hex}"
    routes = celery_app.conf.task_routes
    celery_app.conf.task_routes = {
        "agent.run_agent": {"queue": runs},
        "compaction_app.tasks.*": {"queue": operations},
    }
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": str(django_settings.CELERY_BROKER_URL),
        "PIWEB_RUNS_QUEUE": runs,
        "PIWEB_OPERATIONS_QUEUE": operations,
        "PIWEB_RUN_CONCURRENCY": "1",  # one run thread, kept busy by a provider that hangs
        "PIWEB_WORKER_CONCURRENCY": "1",
        "PIWEB_SUMMARIZER": "",
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
    }
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        log = open(tmp_path / "workers.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [sys.executable, "-m", "piweb.workers"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    celery_app.conf.task_routes = routes
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    with celery_app.connection_for_write() as broker:
        for queue in (runs, operations):
            broker.default_channel.queue_delete(queue)


@pytest.mark.django_db(transaction=True)
def test_a_compaction_runs_while_every_run_thread_waits_on_its_provider(
    owner: Any, queues: Callable[[], subprocess.Popen[bytes]]
) -> None:
    with ProviderServer() as server:
        provider = LLMProvider.objects.create(
            name="claude",
            api="anthropic-messages",
            base_url=server.url,
            model_id="claude-test",
            provider="anthropic",
            api_key="sk-ant-test",
        )
        server.enqueue(hang(60))
        busy = store(owner, conversation(2), pi_id="busy")
        waiting = store(owner, conversation(30, repeat=12), pi_id="compact-me")
        workers_process = queues()
        run = start_run(session=busy, user=owner, prompt="take your time", provider=provider)
        wait_until(lambda: len(server.requests) == 1, 60, "the run's provider request")

        operation = request_compaction(session=waiting, actor=waiting.owner)
        started = time.monotonic()
        wait_until(
            lambda: CompactionRun.objects.get(pk=operation.pk).status == "succeeded", 30, "the compaction"
        )
        assert AgentRun.objects.get(pk=run.pk).status == "running"  # the run still holds its thread
        assert time.monotonic() - started < 30

        abort_run(
            run=AgentRun.objects.get(pk=run.pk), actor=SystemActor("tests")
        )  # seen by the worker's one abort poller
        wait_until(lambda: AgentRun.objects.get(pk=run.pk).is_finished, 30, "the aborted run to end")
        assert workers_process.poll() is None
