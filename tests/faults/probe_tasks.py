"""A worker app that knows tasks piweb does not: a newer release's worker, for the fault tests.

``celery -A tests.faults.probe_tasks worker`` serves piweb's tasks and these. Each records in Redis which
process ran it, so a test sees who took a task and whether it ran at all.
"""

from __future__ import annotations

import os
import time

import redis

from piweb.celery import app

__all__ = ["app", "record", "slow"]


def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@app.task(name="tests.probe.record", acks_late=True, ignore_result=True)
def record(key: str) -> None:
    _redis().rpush(key, os.getpid())


@app.task(name="tests.probe.slow", acks_late=True, ignore_result=True)
def slow(key: str, seconds: float) -> None:
    """Start (noting the process), sleep the first time only, then note the process that finished."""
    store = _redis()
    starts = store.rpush(f"{key}:started", os.getpid())
    if starts == 1:
        time.sleep(seconds)
    store.rpush(f"{key}:done", os.getpid())
