"""Start the Celery workers one machine needs: runs on an I/O-friendly thread pool, the rest on processes.

Agent runs spend nearly all their time waiting for the model provider, so they run as threads (dozens per
process). Compactions, branch summaries and anything else run on a small process pool of their own, so
they start at once even while every run thread is busy. ``python -m piweb.workers`` starts both and stops
both; ``make run`` and ``make worker`` use it.

Environment: ``PIWEB_RUN_CONCURRENCY`` (run threads, default 64), ``PIWEB_WORKER_CONCURRENCY``
(operation processes, default 2), ``PIWEB_RUNS_QUEUE`` and ``PIWEB_OPERATIONS_QUEUE`` (queue names).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

RUNS_QUEUE = "runs"
OPERATIONS_QUEUE = "operations"
DEFAULT_QUEUE = "celery"
ALL_QUEUES = (RUNS_QUEUE, OPERATIONS_QUEUE, DEFAULT_QUEUE)


def runs_queue(env: Mapping[str, str]) -> str:
    return env.get("PIWEB_RUNS_QUEUE", "") or RUNS_QUEUE


def operations_queue(env: Mapping[str, str]) -> str:
    return env.get("PIWEB_OPERATIONS_QUEUE", "") or OPERATIONS_QUEUE


def worker_commands(env: Mapping[str, str], *, loglevel: str = "INFO") -> list[list[str]]:
    """Return the two worker command lines: run threads, and operation processes."""
    celery = str(Path(sys.executable).with_name("celery"))
    runs = env.get("PIWEB_RUN_CONCURRENCY", "64")
    operations = env.get("PIWEB_WORKER_CONCURRENCY", "2")
    common = [celery, "-A", "piweb", "worker", f"--loglevel={loglevel}"]
    return [
        [*common, "-n", "runs@%h", "-Q", runs_queue(env), "--pool=threads", f"--concurrency={runs}"],
        [
            *common,
            "-n",
            "operations@%h",
            "-Q",
            f"{operations_queue(env)},{DEFAULT_QUEUE}",
            "--pool=prefork",
            f"--concurrency={operations}",
        ],
    ]


def _die_with_parent() -> None:
    """Have Linux stop a worker whose launcher was killed outright, so none is left behind."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def main() -> int:
    children = [
        subprocess.Popen(command, preexec_fn=_die_with_parent) for command in worker_commands(os.environ)
    ]
    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)

    # SIGTERM and SIGINT: a warm shutdown (running tasks finish); SIGQUIT: Celery's cold shutdown.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, stop)
    try:
        while not received and all(child.poll() is None for child in children):
            time.sleep(0.2)
    finally:
        forward = signal.SIGQUIT if signal.SIGQUIT in received else signal.SIGTERM
        for child in children:
            if child.poll() is None:
                child.send_signal(forward)
        for child in children:
            child.wait()
    return 0 if received else 1


if __name__ == "__main__":
    raise SystemExit(main())
