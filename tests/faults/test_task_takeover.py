"""Tasks outlive the worker that had them: a SIGKILLed worker's task is finished by the other worker once
the visibility timeout has passed, and a task type a worker does not know waits for one that does.

The workers are real ``celery worker`` processes on a private Redis; ``tests.faults.probe_tasks`` is a
worker app with two tasks piweb does not have (a newer release's worker, in a rolling upgrade).
"""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from celery import Celery

from piweb.workers import ALL_QUEUES, DEFAULT_QUEUE
from tests.procs import wait_until

from .stack import VENV_BIN, Service, Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(180)]

VISIBILITY = 6  # seconds: long enough that the live worker's task is not handed out before the kill


def start_worker(stack: Stack, name: str, app: str = "piweb", pool: str = "solo") -> Service:
    log = stack.log_dir / f"{name}.log"
    command = [str(VENV_BIN / "celery"), "-A", app, "worker", f"--pool={pool}", "--concurrency=1"]
    command += ["-n", f"{name}@%h", "-Q", ",".join(ALL_QUEUES), "--loglevel=INFO"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    worker = Service(name, command, stack.env, log, lambda: b" ready." in log.read_bytes())
    worker.start(wait=60)
    return worker


def send(stack: Stack, task: str, *args: object) -> None:
    """Queue a task by name as a web process would, without this process knowing the task."""
    # Not the current app: the rest of this process must go on queueing to its own broker.
    producer = Celery("sender", broker=stack.redis.url, set_as_current=False)
    try:
        producer.send_task(task, args=args, queue=DEFAULT_QUEUE)
    finally:
        producer.close()


def test_a_killed_workers_task_is_finished_by_the_other_worker(stack: Stack) -> None:
    stack.env["PIWEB_CELERY_VISIBILITY_TIMEOUT"] = str(VISIBILITY)
    store = redis.Redis.from_url(stack.redis.url)
    first = start_worker(stack, "first", "tests.faults.probe_tasks")
    second = start_worker(stack, "second", "tests.faults.probe_tasks")
    assert first.process is not None and second.process is not None
    workers = {first.process.pid: first, second.process.pid: second}
    try:
        key = f"slow-{uuid.uuid4().hex}"
        send(stack, "tests.probe.slow", key, 120)
        wait_until(lambda: store.llen(f"{key}:started") == 1, 20, "a worker to start the task")
        holder = int(store.lindex(f"{key}:started", 0) or 0)
        killed_at = time.monotonic()
        workers[holder].kill()  # mid-task: it would sleep two more minutes

        wait_until(lambda: store.llen(f"{key}:done") == 1, VISIBILITY + 20, "the other worker to finish it")
        takeover = time.monotonic() - killed_at
        finisher = int(store.lindex(f"{key}:done", 0) or 0)
        assert finisher != holder and finisher in workers
        # Redis hands the message out again once it has been unacknowledged for the visibility timeout
        # (counted from the delivery, just before the kill), looked for every quarter of it.
        assert takeover <= VISIBILITY + VISIBILITY / 4 + 4, takeover
        print(f"task takeover after its worker's SIGKILL: {takeover:.1f} s (visibility {VISIBILITY} s)")
    finally:
        first.stop()
        second.stop()


# The group's two pools: operations on processes, runs on threads.
@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_a_task_type_the_worker_does_not_know_waits_for_one_that_does(stack: Stack, pool: str) -> None:
    store = redis.Redis.from_url(stack.redis.url)
    old = start_worker(stack, "old", pool=pool)  # piweb's own tasks only
    new: Service | None = None
    try:
        key = f"record-{uuid.uuid4().hex}"
        send(stack, "tests.probe.record", key)
        # The old worker receives it, cannot run it, and hands it back again and again: never dropped.
        wait_until(
            lambda: old.log_path.read_bytes().count(b"unknown task tests.probe.record") >= 3,
            20,
            "the old worker to hand the task back",
        )
        assert store.llen(key) == 0
        assert b"Received unregistered task" not in old.log_path.read_bytes()

        new = start_worker(stack, "new", "tests.faults.probe_tasks")
        wait_until(lambda: store.llen(key) == 1, 30, "the new worker to run the task")
        assert new.process is not None and int(store.lindex(key, 0) or 0) == new.process.pid
        assert old.process is not None and old.process.poll() is None  # the old worker carries on
        time.sleep(3)
        assert store.llen(key) == 1  # run once, not again
    finally:
        if new is not None:
            new.stop()
        old.stop()
