"""A worker killed in the middle of a compaction: the task comes back and the session gets one entry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from compaction_app.models import CompactionRun
from compaction_app.services import request_compaction
from piweb.celery import app as celery_app
from providers.llm.testserver import ProviderServer, hang, reply
from providers.models import LLMProvider
from tests.factories import conversation, payloads, store
from tests.procs import database_url, wait_until

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).with_name("celery")
VISIBILITY_TIMEOUT = 3  # seconds before Redis hands an unacknowledged task to another worker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        not str(django_settings.CELERY_BROKER_URL).startswith("redis"), reason="needs the Redis broker"
    ),
]


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[bytes]]]:
    """Return ``start(queue)``, which launches a real worker on the test database; all are stopped after."""
    started: list[subprocess.Popen[bytes]] = []
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": str(django_settings.CELERY_BROKER_URL),
        "PIWEB_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "PIWEB_SUMMARIZER": "",
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
    }

    def start(queue: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f"worker-{len(started)}.log", "wb")  # noqa: SIM115 - closed with the process
        command = [str(CELERY), "-A", "piweb", "worker", "--pool=solo", "--concurrency=1", "-Q", queue]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_compaction_leaves_exactly_one_entry(
    owner: Any, provider_server: ProviderServer, workers: Any, settings: Any
) -> None:
    queue = f"piweb-test-{uuid.uuid4().hex}"
    settings.PIWEB_COMPACTION_QUEUE = queue
    LLMProvider.objects.create(
        name="loopback",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        api_key="sk-loopback",
        is_summarizer_default=True,
    )
    # The first call stalls long enough to be killed in; the redelivered task gets a real answer.
    provider_server.enqueue(hang(30), reply("## Goal\n- Survive a worker crash."))
    # Large enough to compact with the default settings, which are what the worker reads.
    session = store(owner, conversation(30, repeat=12))

    try:
        run = request_compaction(session=session, actor=session.owner)
        first = workers(queue)
        wait_until(lambda: len(provider_server.requests) == 1, 30, "the first summary request")
        run.refresh_from_db()
        assert run.status == "running"

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        assert payloads(session, "compaction") == []
        # A worker looks for unacknowledged tasks when it starts; start the next once the window has passed.
        time.sleep(VISIBILITY_TIMEOUT + 1)

        workers(queue)
        wait_until(
            lambda: CompactionRun.objects.get(pk=run.pk).status == "succeeded", 45, "the redelivered task"
        )
    finally:
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)

    [entry] = payloads(session, "compaction")
    assert entry["summary"].startswith("## Goal\n- Survive a worker crash.")
    run.refresh_from_db()
    assert (run.result_entry_id, run.attempts) == (entry["id"], 2)
    assert len(provider_server.requests) == 2
    session.refresh_from_db()
    assert session.leaf_entry_id == entry["id"]


@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_compaction_is_taken_up_by_a_live_worker_after_the_visibility_timeout(
    owner: Any, provider_server: ProviderServer, workers: Any, settings: Any, tmp_path: Path
) -> None:
    """A worker already running takes the task over once the visibility timeout has passed, not once
    kombu gets round to its sweep (every 100 s by default, whatever the timeout)."""
    queue = f"piweb-test-{uuid.uuid4().hex}"
    settings.PIWEB_COMPACTION_QUEUE = queue
    LLMProvider.objects.create(
        name="loopback",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        api_key="sk-loopback",
        is_summarizer_default=True,
    )
    provider_server.enqueue(hang(60), reply("## Goal\n- Taken over."))
    session = store(owner, conversation(30, repeat=12))
    logs = [tmp_path / "worker-0.log", tmp_path / "worker-1.log"]
    try:
        pair = [workers(queue), workers(queue)]
        wait_until(lambda: all(b" ready." in log.read_bytes() for log in logs), 30, "both workers")
        run = request_compaction(session=session, actor=session.owner)
        wait_until(lambda: len(provider_server.requests) == 1, 30, "the first summary request")
        [holder] = [p for p, log in zip(pair, logs, strict=True) if b"run_compaction[" in log.read_bytes()]

        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        killed = time.monotonic()
        wait_until(
            lambda: CompactionRun.objects.get(pk=run.pk).status == "succeeded",
            VISIBILITY_TIMEOUT + 15,
            "the live worker to take the task over",
        )
        taken_over = time.monotonic() - killed
    finally:
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)

    [entry] = payloads(session, "compaction")
    assert entry["summary"].startswith("## Goal\n- Taken over.")
    print(f"\ntaken over {taken_over:.1f} s after the kill, visibility timeout {VISIBILITY_TIMEOUT} s")
