"""Start the Celery workers one machine needs: runs on an I/O-friendly thread pool, the rest on processes.

Agent runs spend nearly all their time waiting for the model provider, so they run as threads (dozens per
process). Compactions, branch summaries and anything else run on a small process pool of their own, so
they start at once even while every run thread is busy. ``python -m piweb.workers`` starts both and stops
both; ``make run`` and ``make worker`` use it (``python -m piweb.workers runs`` or ``operations`` starts
one). A worker that exits on its own is started again.

Environment: ``PIWEB_RUN_CONCURRENCY`` (run threads, default 64), ``PIWEB_WORKER_CONCURRENCY``
(operation processes, default 2), ``PIWEB_RUNS_QUEUE`` and ``PIWEB_OPERATIONS_QUEUE`` (queue names),
``PIWEB_BEAT`` (1: the operations worker also runs Celery beat, the periodic tasks; with Redis the
beats of every group elect one that sends them, ``piweb.beat``).

Database connections (README "Connection budget"): the runs worker's threads share one pool of
``PIWEB_DB_POOL_MAX`` (a run holds a connection only while it writes, never while the model answers);
each operation process runs one task at a time and gets a pool of ``PIWEB_OPERATIONS_DB_POOL_MAX`` (2).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from piweb import config

RUNS_QUEUE = "runs"
OPERATIONS_QUEUE = "operations"
DEFAULT_QUEUE = "celery"
ALL_QUEUES = (RUNS_QUEUE, OPERATIONS_QUEUE, DEFAULT_QUEUE)
COLD_GRACE_SECONDS = 8.0  # how long a cold shutdown may take before the workers are killed


def runs_queue(env: Mapping[str, str]) -> str:
    return env.get("PIWEB_RUNS_QUEUE", "") or RUNS_QUEUE


def operations_queue(env: Mapping[str, str]) -> str:
    return env.get("PIWEB_OPERATIONS_QUEUE", "") or OPERATIONS_QUEUE


def worker_commands(env: Mapping[str, str], *, loglevel: str = "INFO") -> list[list[str]]:
    """Return the two worker command lines: run threads, and operation processes."""
    celery = str(Path(sys.executable).with_name("celery"))
    operations = env.get("PIWEB_WORKER_CONCURRENCY", "2")
    if env.get("REDIS_URL"):
        runs_pool = ["--pool=threads", f"--concurrency={env.get('PIWEB_RUN_CONCURRENCY', '64')}"]
    else:
        # The embedded file broker hands a task back only when its worker closes cleanly, which a
        # thread still streaming a run prevents: there, runs take processes so Ctrl-C gives them back.
        runs_pool = ["--pool=prefork", f"--concurrency={env.get('PIWEB_RUN_CONCURRENCY', operations)}"]
    common = [celery, "-A", "piweb", "worker", f"--loglevel={loglevel}"]
    return [
        [*common, "-n", "runs@%h", "-Q", runs_queue(env), *runs_pool],
        [
            *common,
            "-n",
            "operations@%h",
            "-Q",
            f"{operations_queue(env)},{DEFAULT_QUEUE}",
            "--pool=prefork",
            f"--concurrency={operations}",
            *beat_options(env),
        ],
    ]


def beat_options(env: Mapping[str, str]) -> list[str]:
    """Return the options that run Celery beat inside the operations worker (the daily retention task).

    Each group may run one: with Redis the beats elect the one that sends (``piweb.beat``), so two
    groups do not run the periodic tasks twice and a surviving group takes over from a dead one.
    ``PIWEB_BEAT=0`` leaves it out (a deployment with a beat process of its own). The schedule is a
    time of day (``settings.CELERY_BEAT_SCHEDULE``), so beat's state file matters little: each start
    gets its own (``PIWEB_BEAT_SCHEDULE`` names a lasting one), and two checkouts never share one.
    """
    if not config.env_flag(env, "PIWEB_BEAT", default=True):
        return []
    schedule = env.get("PIWEB_BEAT_SCHEDULE", "") or str(beat_schedule_file())
    return ["--beat", f"--schedule={schedule}"]


@functools.cache
def beat_schedule_file() -> Path:
    # Not the pid alone: a group killed with SIGKILL leaves its file (and SQLite's lock files) behind,
    # and the next group given that pid failed to start beat on them ("locking protocol").
    return Path(tempfile.gettempdir()) / f"piweb-beat-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def worker_environments(env: Mapping[str, str]) -> list[dict[str, str]]:
    """Return the environment of each worker command: the runs worker's as given, and the operation
    processes' with their own small database pool (one task at a time: it needs no more)."""
    operations = dict(env)
    pooled = config.database_pool(env) is not None
    if pooled:
        size = env.get("PIWEB_OPERATIONS_DB_POOL_MAX", "").strip() or str(config.OPERATIONS_DB_POOL_MAX)
        operations.update(PIWEB_DB_POOL_MAX=size, PIWEB_DB_POOL_MIN="0")
    return [dict(env), operations]


def _die_with_parent() -> None:
    """Have Linux stop a worker whose launcher was killed outright, so none is left behind."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Child:
    """One worker of the group, started again whenever it exits on its own."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command, self.env = command, env
        self.restarts = 0
        self.started = 0.0
        self.due: float | None = None  # when a worker that exited is started again
        self.process = self.start()

    def start(self) -> subprocess.Popen[bytes]:
        self.started, self.due = time.monotonic(), None
        self.process = subprocess.Popen(self.command, env=self.env, preexec_fn=_die_with_parent)
        return self.process

    def running(self) -> bool:
        return self.process.poll() is None

    def supervise(self) -> None:
        """Start the worker again if it exited: at once after a long life, else after a growing pause."""
        if self.running():
            return
        now = time.monotonic()
        if self.due is None:
            if now - self.started > RESTART_RESET_SECONDS:
                self.restarts = 0
            pause = min(RESTART_MAX_PAUSE, RESTART_FIRST_PAUSE * 2**self.restarts)
            self.restarts += 1
            self.due = now + pause
            name = self.command[self.command.index("-n") + 1] if "-n" in self.command else self.command[0]
            code = self.process.returncode
            print(f"piweb.workers: {name} exited ({code}); starting it again in {pause:g} s", file=sys.stderr)
        elif now >= self.due:
            self.start()


# A worker that exits without being asked to (Celery stops on an error it does not expect) is started
# again: the group serves every queue, and the embedded beat runs again with the operations worker.
RESTART_FIRST_PAUSE = 1.0
RESTART_MAX_PAUSE = 30.0
RESTART_RESET_SECONDS = 60.0  # a worker that ran this long starts again at once


WORKER_NAMES = ("runs", "operations")  # in the order of worker_commands()


def main(argv: list[str] | None = None) -> int:
    """Start the group; ``python -m piweb.workers runs`` (or ``operations``) starts that worker alone, so a
    container or a unit per worker scales each on its own."""
    names = sys.argv[1:] if argv is None else argv
    unknown = [name for name in names if name not in WORKER_NAMES]
    if unknown:
        print(f"piweb.workers: no worker named {', '.join(unknown)} (runs, operations)", file=sys.stderr)
        return 2
    pairs = zip(worker_commands(os.environ), worker_environments(os.environ), strict=True)
    group = [
        Child(command, env)
        for name, (command, env) in zip(WORKER_NAMES, pairs, strict=True)
        if not names or name in names
    ]
    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)

    # SIGTERM: a warm shutdown (running tasks finish). SIGINT (Ctrl-C) and SIGQUIT: Celery's cold shutdown,
    # which gives a running task back to the queue within a second instead of waiting for a long run.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, stop)
    try:
        while not received:
            for child in group:
                child.supervise()
            time.sleep(0.2)
    finally:
        children = [child.process for child in group]
        forwarded = 0
        cold_since: float | None = None
        while any(process.poll() is None for process in children):
            cold = signal.SIGINT in received or signal.SIGQUIT in received
            if cold and cold_since is None:
                cold_since = time.monotonic()
            if cold_since is not None and time.monotonic() - cold_since > COLD_GRACE_SECONDS:
                # A thread-pool worker cannot stop a run thread that is still streaming; its task is
                # acknowledged late, so killing the worker gives the task back all the same.
                for process in children:
                    if process.poll() is None:
                        process.kill()
                break
            # A later Ctrl-C or SIGQUIT during a warm shutdown still turns it cold.
            if len(received) > forwarded or forwarded == 0:
                for process in children:
                    if process.poll() is None:
                        process.send_signal(signal.SIGQUIT if cold else signal.SIGTERM)
                forwarded = max(len(received), 1)
            time.sleep(0.1)
    for leftover in beat_schedule_file().parent.glob(beat_schedule_file().name + "*"):
        leftover.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
