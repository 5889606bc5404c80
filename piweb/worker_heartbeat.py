"""Which queues a live worker serves: each worker says so in Redis every few seconds; ``/readyz`` reads it.

A worker's consumer writes ``piweb:worker-alive:<queue>`` for each queue it consumes, with an expiry of
``PIWEB_WORKER_STALE_SECONDS`` (30), from its event loop's timer: the beat stops when the consumer stops
(a lost broker connection, a shutdown, a worker stopped for good), not only when the process ends. A
queue whose key is missing has had no live worker for that long, and tasks sent to it would wait.

Only with the Redis broker; the embedded file broker has no shared store for it, and eager tasks need no
worker at all (``settings.PIWEB_READY_WORKERS``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from typing import Any

import redis
from celery import bootsteps
from django.conf import settings

__all__ = ["Heartbeat", "beat_interval", "silent_queues"]

log = logging.getLogger(__name__)

KEY = "piweb:worker-alive:{}"
_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        # Short timeouts: a worker's event loop and the readiness probe must never hang on Redis.
        _client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)
    return _client


def stale_seconds() -> float:
    return float(settings.PIWEB_WORKER_STALE_SECONDS)


def beat_interval() -> float:
    """Seconds between beats: several per staleness bound, so one late beat never reads as dead."""
    return max(0.5, stale_seconds() / 6)


def beat(queues: Iterable[str]) -> None:
    """Say that a live worker consumes ``queues`` now."""
    expiry = math.ceil(stale_seconds())
    with _redis().pipeline(transaction=False) as pipe:
        for queue in queues:
            pipe.set(KEY.format(queue), str(time.time()), ex=expiry)
        pipe.execute()


def silent_queues(queues: Iterable[str]) -> list[str]:
    """Return the queues no live worker has served within the staleness bound."""
    names = list(queues)
    seen = _redis().mget([KEY.format(q) for q in names])
    return [name for name, value in zip(names, seen, strict=True) if value is None]


class Heartbeat(bootsteps.StartStopStep):
    """A consumer step: beats while the consumer runs, on the worker's own timer."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        self.timer_entry: Any = None
        super().__init__(parent, **kwargs)

    def start(self, parent: Any) -> None:
        if not str(settings.CELERY_BROKER_URL).startswith("redis"):
            return
        queues = sorted(queue.name for queue in parent.task_consumer.queues)
        self._beat(queues)
        self.timer_entry = parent.timer.call_repeatedly(beat_interval(), self._beat, (queues,))

    def stop(self, parent: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    shutdown = stop

    @staticmethod
    def _beat(queues: list[str]) -> None:
        try:
            beat(queues)
        except redis.RedisError as exc:  # the broker is away; the consumer reconnects by itself
            log.warning("worker heartbeat not written: %s", exc)
