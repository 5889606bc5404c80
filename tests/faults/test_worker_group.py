"""The worker group (``python -m piweb.workers``) through a Redis restart and a killed worker.

Redis is killed while a run streams and started again 5 s later: the workers must reconnect and take the
runs queued afterwards. A worker that dies is started again by the group's supervisor. And readiness
must notice when no worker is left: ``/readyz`` turns 503 naming the workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from providers.llm.testserver import ProviderServer, reply
from tests.procs import wait_until

from .stack import Service, Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(180)]

STALE_SECONDS = 3  # how long readiness waits for a worker's heartbeat before it counts the worker gone
ENDED = ("succeeded", "failed", "aborted")


def start_run(stack: Stack) -> str:
    with stack.client() as http:
        pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]
        response = http.post(f"/api/sessions/{pk}/runs/", json={"prompt": "Tell me a story."})
    assert response.status_code == 202, response.text
    return str(response.json()["runId"])


def run_status(stack: Stack, run_id: str) -> str:
    with stack.client() as http:
        return str(http.get(f"/api/runs/{run_id}/").json()["status"])


def runs_worker_pid(supervisor: int) -> int:
    """Return the pid of the group's runs worker (a child of the supervisor, named runs@<host>)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == supervisor and b"runs@%h" in command:
            return int(stat.parent.name)
    raise AssertionError("the runs worker is not running")


def readiness(stack: Stack) -> tuple[int, list[str]]:
    with stack.client(timeout=10) as http:
        response = http.get("/readyz")
    return response.status_code, list(response.json().get("failed", []))


def test_workers_outlive_a_redis_restart_and_readiness_notices_when_they_are_gone(stack: Stack) -> None:
    provider = ProviderServer().start()
    # The first run streams for about 10 s, so Redis dies in the middle of it; later runs answer at once.
    provider.enqueue(reply("Once upon a time " * 200, delay=0.05), *[reply("Done.") for _ in range(10)])
    created = stack.python(
        "from providers.models import LLMProvider;"
        f"LLMProvider.objects.create(name='loopback', api='anthropic-messages', base_url='{provider.url}',"
        "model_id='claude-test', provider='anthropic', api_key='sk-test', is_summarizer_default=True);"
        "print('ok')"
    )
    assert created.strip() == "ok"
    stack.env["PIWEB_WORKER_STALE_SECONDS"] = str(STALE_SECONDS)
    stack.start_web()
    workers = stack.start_worker_group(PIWEB_LOG_LEVEL="INFO")
    assert workers.process is not None
    try:
        streaming = start_run(stack)
        wait_until(lambda: len(provider.requests) == 1, 30, "the first run to reach the model")

        stack.redis.service.kill()
        time.sleep(5)
        stack.redis.service.start()

        # A run queued after the restart is served, and the one that streamed through it ends.
        after = start_run(stack)
        wait_until(lambda: run_status(stack, after) == "succeeded", 45, "a run queued after the restart")
        wait_until(lambda: run_status(stack, streaming) in ENDED, 45, "the run that streamed through it")
        wait_until(lambda: readiness(stack)[0] == 200, 20, "readiness after the restart")

        # A worker that dies is started again by the group, and serves the next run.
        os.kill(runs_worker_pid(workers.process.pid), signal.SIGKILL)
        again = start_run(stack)
        wait_until(lambda: run_status(stack, again) == "succeeded", 45, "a run after a worker died")

        # No worker at all: readiness says so once the last heartbeat is older than the bound.
        workers.kill()
        wait_until(lambda: readiness(stack) == (503, ["workers"]), STALE_SECONDS + 10, "readiness to fail")
    finally:
        provider.stop()


def test_one_worker_of_the_group_starts_alone_by_its_name(tmp_path: Path) -> None:
    """``python -m piweb.workers operations`` (the image's ``operations`` entry) starts that worker only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_"))}
    env.update(PIWEB_DATA_DIR=str(tmp_path / "data"), PIWEB_BEAT="0", PYTHONUNBUFFERED="1")
    log = tmp_path / "operations.log"
    command = [sys.executable, "-m", "piweb.workers", "operations"]
    worker = Service("operations", command, env, log, lambda: b" ready." in log.read_bytes())
    try:
        worker.start(wait=60)
        time.sleep(3)  # time enough for a second worker to say it is ready, if one was started
        ready = [line for line in log.read_bytes().splitlines() if line.endswith(b" ready.")]
        assert len(ready) == 1 and b"operations@" in ready[0], ready
    finally:
        worker.stop()
    wrong = subprocess.run([sys.executable, "-m", "piweb.workers", "beat"], env=env, capture_output=True)
    assert wrong.returncode == 2 and b"no worker named beat" in wrong.stderr
