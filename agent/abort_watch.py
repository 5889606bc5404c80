"""One thread per worker process polls the abort flags of every run it executes.

A runs worker executes dozens of runs at once in threads; a watcher thread (and database connection) per
run would double the connections a worker holds. Here each run registers an event, and a single poller
sets the events of runs whose abort was requested, with one query per poll for all of them.
"""

from __future__ import annotations

import threading
from types import TracebackType

from django.db import connection

from agent.models import AgentRun

POLL_SECONDS = 0.2

_lock = threading.Lock()
_watched: dict[int, threading.Event] = {}
_wake = threading.Condition(_lock)
_poller: threading.Thread | None = None


class AbortWatch:
    """Set ``event`` as soon as the run's abort flag is seen, while inside the ``with`` block."""

    def __init__(self, run_pk: int, event: threading.Event) -> None:
        self.run_pk = run_pk
        self.event = event

    def __enter__(self) -> AbortWatch:
        global _poller
        with _lock:
            _watched[self.run_pk] = self.event
            if _poller is None or not _poller.is_alive():
                _poller = threading.Thread(target=_poll, name="abort-watch", daemon=True)
                _poller.start()
            _wake.notify()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with _lock:
            if _watched.get(self.run_pk) is self.event:
                del _watched[self.run_pk]


def _poll() -> None:
    while True:
        with _lock:
            while not _watched:
                connection.close()  # idle: hold no connection
                _wake.wait()
            pks = list(_watched)
        try:
            aborted = set(
                AgentRun.objects.filter(pk__in=pks, abort_requested=True).values_list("pk", flat=True)
            )
        except Exception:  # a lost connection: try again on the next poll
            connection.close()
            aborted = set()
        with _lock:
            for pk in aborted:
                event = _watched.get(pk)
                if event is not None:
                    event.set()
            _wake.wait(POLL_SECONDS)
