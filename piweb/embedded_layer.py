"""The channel layer of the embedded default (no Redis): groups in memory, events across processes.

``make run`` serves sockets from daphne while a separate Celery worker runs compactions, summaries and
prompt runs. The in-memory layer cannot carry the worker's events to daphne's sockets, so here every
``group_send`` is written to a small SQLite file beside the embedded database, and each process that
has sockets (it called ``group_add``) reads new rows every ``poll_interval`` seconds and delivers them
to its own in-memory groups. SQLite hands out row ids in commit order, so readers see every event in
order and miss none. Rows are kept ``retain_seconds`` for readers that fall briefly behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from channels.layers import InMemoryChannelLayer

log = logging.getLogger(__name__)

__all__ = ["EmbeddedChannelLayer"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS live_events ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, grp TEXT NOT NULL, message TEXT NOT NULL, at REAL NOT NULL)"
)


class EmbeddedChannelLayer(InMemoryChannelLayer):
    """In-memory groups per process; group messages travel between processes through a SQLite file."""

    def __init__(
        self, path: str, poll_interval: float = 0.05, retain_seconds: float = 300.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.path = path
        self.poll_interval = poll_interval
        self.retain_seconds = retain_seconds
        self._local = threading.local()
        self._poller: asyncio.Task[None] | None = None
        self._writes = 0

    def _db(self) -> sqlite3.Connection:
        """Return this thread's connection to the relay file, creating the file and table once."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            # WAL lets the readers poll while a writer appends; the events are hints, so no fsync each.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """Record the message for every process's readers (this one's included)."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        db = self._db()
        now = time.time()
        db.execute(
            "INSERT INTO live_events (grp, message, at) VALUES (?, ?, ?)",
            (group, json.dumps(message, default=str), now),
        )
        self._writes += 1
        if self._writes % 200 == 0:
            db.execute("DELETE FROM live_events WHERE at < ?", (now - self.retain_seconds,))

    async def group_add(self, group: str, channel: str) -> None:
        await super().group_add(group, channel)
        loop = asyncio.get_running_loop()
        if self._poller is None or self._poller.done() or self._poller.get_loop() is not loop:
            self._poller = loop.create_task(self._poll(self._last_id()))

    def _last_id(self) -> int:
        return int(self._db().execute("SELECT COALESCE(MAX(id), 0) FROM live_events").fetchone()[0])

    async def _poll(self, cursor: int) -> None:
        """Deliver rows written after ``cursor`` to this process's groups, in order, for good."""
        while True:
            await asyncio.sleep(self.poll_interval)
            try:
                rows = (
                    self._db()
                    .execute(
                        "SELECT id, grp, message FROM live_events WHERE id > ? ORDER BY id LIMIT 1000",
                        (cursor,),
                    )
                    .fetchall()
                )
            except sqlite3.Error:
                log.warning("live events could not be read; retrying", exc_info=True)
                continue
            for row_id, group, raw in rows:
                cursor = row_id
                try:
                    await super().group_send(group, json.loads(raw))
                except Exception:
                    # One full socket must not stop the others; its page resyncs on its next event.
                    log.warning("live event for %s was not delivered", group, exc_info=True)
