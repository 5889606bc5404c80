"""Two worker groups (``python -m piweb.workers``), each starting beat: the periodic tasks go out once.

The beats elect a leader through a Redis lease (``piweb.beat``). The retention task is scheduled every
second here: over a window the two groups together send it about once a second, from one group only.
When the leading group is SIGKILLed the other takes the lease once it runs out and sends from then on.
"""

from __future__ import annotations

import os
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import redis

from piweb.beat import LEADER_KEY
from tests.procs import wait_until

from .stack import VENV_BIN, Service, Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(180)]

LEASE_SECONDS = 3
SENT = b"Sending due task governance-retention"
WINDOW = 10.0


def start_group(stack: Stack, name: str) -> Service:
    log = stack.log_dir / f"{name}.log"
    env = {
        **stack.env,
        "PIWEB_LOG_LEVEL": "INFO",
        "PIWEB_RETENTION_EVERY_SECONDS": "1",
        "PIWEB_BEAT_LOCK_SECONDS": str(LEASE_SECONDS),
        # Small pools: two groups share a small machine with the rest of the suite.
        "PIWEB_RUN_CONCURRENCY": "2",
        "PIWEB_WORKER_CONCURRENCY": "1",
    }
    group = Service(
        name,
        [sys.executable, "-m", "piweb.workers"],
        env,
        log,
        lambda: log.read_bytes().count(b" ready.") >= 2,
    )
    group.start(wait=90)
    return group


def sent(group: Service) -> int:
    return group.log_path.read_bytes().count(SENT)


def beat_started(group: Service) -> bool:
    return b"beat: Starting" in group.log_path.read_bytes()


def process_group(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


def test_two_worker_groups_send_the_periodic_tasks_once_and_the_survivor_takes_over(stack: Stack) -> None:
    leases = redis.Redis.from_url(stack.redis.url)
    first = start_group(stack, "group-a")
    second = start_group(stack, "group-b")
    try:
        wait_until(lambda: leases.get(LEADER_KEY) is not None, 20, "a beat to take the lease")
        # Both beats run (the one that does not lead included), or a takeover could never happen.
        for group in (first, second):
            wait_until(partial(beat_started, group), 30, f"{group.name}'s beat")
        wait_until(lambda: sent(first) + sent(second) >= 2, 20, "the leader to send the task")

        before = (sent(first), sent(second))
        time.sleep(WINDOW)
        during = (sent(first) - before[0], sent(second) - before[1])
        # Once a second from one beat: about WINDOW sends in all (not twice that), all from one group.
        assert WINDOW - 3 <= sum(during) <= WINDOW + 2, during
        assert min(during) == 0, f"both groups sent the periodic task: {during}"

        holder = leases.get(LEADER_KEY)
        assert holder is not None
        pid = int(holder.decode().split(":")[1])
        leader, survivor = (first, second) if during[0] else (second, first)
        assert leader.process is not None and process_group(pid) == leader.process.pid

        already = sent(survivor)
        killed = time.monotonic()
        leader.kill()
        try:
            wait_until(lambda: sent(survivor) > already, LEASE_SECONDS + 10, "the surviving group's beat")
        except AssertionError as timeout:
            # Say what the survivor's beat did, so a failure far from here can be read without its logs.
            beat = [line for line in survivor.log_path.read_bytes().splitlines() if b"/Beat]" in line]
            tail = b"\n".join(beat[-8:]).decode(errors="replace")
            raise AssertionError(f"{timeout}; the survivor's last beat lines:\n{tail}") from timeout
        takeover = time.monotonic() - killed
        # The lease runs out LEASE_SECONDS after its last renewal; the survivor asks every third of it.
        assert takeover <= LEASE_SECONDS + LEASE_SECONDS / 3 + 2, takeover
        print(f"beat takeover after the leader's SIGKILL: {takeover:.1f} s (lease {LEASE_SECONDS} s)")

        after = sent(survivor)
        time.sleep(5)
        assert 3 <= sent(survivor) - after <= 7
    finally:
        for group in (first, second):
            group.stop()


def test_without_redis_beat_sends_as_celery_does(tmp_path: Path) -> None:
    """``make run`` without Redis (the embedded file broker): one machine, no lease, the tasks go out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_"))}
    env.update(PIWEB_DATA_DIR=str(tmp_path / "data"), PIWEB_RETENTION_EVERY_SECONDS="1", PYTHONUNBUFFERED="1")
    log = tmp_path / "beat.log"
    command = [str(VENV_BIN / "celery"), "-A", "piweb", "beat", "--loglevel=INFO"]
    command += [f"--schedule={tmp_path / 'schedule'}"]
    beat = Service("beat", command, env, log, lambda: log.read_bytes().count(SENT) >= 3)
    try:
        beat.start(wait=30)
    finally:
        beat.stop()
