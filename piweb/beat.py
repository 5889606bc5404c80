"""Celery beat that sends the periodic tasks from one process only, however many beats run.

Every ``python -m piweb.workers`` may start beat (``PIWEB_BEAT``, on by default), so a deployment of two
worker groups ran the retention task and the sweeps twice as often. With a Redis broker each beat here
asks Redis for a lease (``SET piweb:beat:leader <token> NX PX <ttl>``): the holder sends the due tasks and
renews its lease every third of the lease's time; the others keep their schedule moving without sending
anything and ask again as often. When the holder dies its lease runs out and another beat takes it within
``PIWEB_BEAT_LOCK_SECONDS`` (plus one asking interval). A holder that cannot reach Redis stops sending
at once: it may have lost the lease, and tasks would not reach a broker that is down anyway.

Without Redis (``make run`` on the embedded file broker) there is one machine and one worker group, and
beat sends as Celery's own does. Settings name the class as ``CELERY_BEAT_SCHEDULER``, so a beat of its
own (``celery -A piweb beat``) takes part in the same election.
"""

from __future__ import annotations

import contextlib
import dbm.dumb
import logging
import os
import shelve
import socket
import time
import uuid
from collections.abc import MutableMapping
from typing import Any, cast

import redis
from celery.beat import PersistentScheduler, ScheduleEntry
from django.conf import settings

__all__ = ["LEADER_KEY", "ElectedScheduler"]

logger = logging.getLogger("piweb.beat")

LEADER_KEY = "piweb:beat:leader"
# Renew the lease only while it is still ours (a holder that stalled past its lease must not take it
# back from the beat that replaced it).
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


class ElectedScheduler(PersistentScheduler):
    """A persistent scheduler whose due tasks are sent only while this process holds the lease."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lease_seconds = float(settings.PIWEB_BEAT_LOCK_SECONDS)
        url = settings.CELERY_BROKER_URL
        self.redis: redis.Redis | None = None
        if url.startswith(("redis://", "rediss://", "unix://")):
            self.redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        # Which beat this is, for whoever reads the key: host, process, and a nonce for a reused pid.
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.leading = self.redis is None
        self._asked_at = float("-inf")
        super().__init__(*args, **kwargs)
        if self.redis is not None:
            # Tick at least every third of the lease, so the holder renews it in time.
            configured: float = self.max_interval  # type: ignore[has-type]  # set by Celery's __init__
            self.max_interval = min(configured, self.ask_every)

    def _open_schedule(self) -> shelve.Shelf[Any]:
        # Not the shelve default: on Python 3.13 that is SQLite in WAL mode, whose locks failed beat at
        # start now and then ("locking protocol"), and retention never ran. One beat owns its file.
        store = cast("MutableMapping[bytes, bytes]", dbm.dumb.open(self.schedule_filename, "c"))  # noqa: SIM115 - the shelf closes it
        return shelve.Shelf(store, writeback=True)

    @property
    def ask_every(self) -> float:
        return max(self.lease_seconds / 3, 0.2)

    def _ask(self) -> None:
        """Take the lease if it is free, or renew it if it is ours; note whether this beat leads."""
        assert self.redis is not None
        ttl_ms = int(self.lease_seconds * 1000)
        was_leading = self.leading
        try:
            # Renew first even after a failed ask: a lease Redis kept through a short outage is still ours.
            self.leading = bool(self.redis.eval(_RENEW, 1, LEADER_KEY, self.token, ttl_ms))
            if not self.leading:
                self.leading = bool(self.redis.set(LEADER_KEY, self.token, nx=True, px=ttl_ms))
        except redis.RedisError as exc:
            if was_leading:
                logger.warning("beat: Redis did not answer (%s); sending nothing until it does", exc)
            self.leading = False
        if self.leading and not was_leading:
            logger.info("beat: %s leads; it sends the periodic tasks", self.token)
        elif was_leading and not self.leading:
            logger.warning("beat: %s lost the lead; another beat sends the periodic tasks", self.token)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if self.redis is not None:
            now = time.monotonic()
            if now - self._asked_at >= self.ask_every:
                self._asked_at = now
                self._ask()
        interval: float = super().tick(*args, **kwargs)
        return interval if self.redis is None else min(interval, self.ask_every)

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> None:
        # A beat that does not lead still moves its schedule on (reserve() ran), so when it takes over
        # it sends what falls due from then on, not everything the leader already sent.
        if self.leading:
            super().apply_entry(entry, producer=producer)

    def close(self) -> None:
        # Hand the lease over at once on a clean stop instead of letting the others wait it out.
        if self.redis is not None and self.leading:
            with contextlib.suppress(redis.RedisError):
                self.redis.eval(_RELEASE, 1, LEADER_KEY, self.token)
            self.leading = False
        super().close()
