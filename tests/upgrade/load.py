"""What the upgrade tests share: a database of their own, this release's code run on it in a child
process, the load's bookkeeping, and the lock monitor.

The monitor polls ``pg_locks`` every 100 ms for the table locks that stop writers on the session, entry
and segment tables (row locks are not counted) and remembers how long each one was held.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.procs import database_url

ROOT = Path(__file__).resolve().parents[2]
HOT_TABLES = ("sessions_app_chatsession", "sessions_app_entry", "sessions_app_segment")
# The table locks that stop an append (row-exclusive) while they are held (row locks are not counted).
BLOCKING = ("ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock")
LONGEST_LOCK = 2.0  # seconds a writer may be stopped by one lock


@dataclass
class Load:
    """What the threads did: each operation's kind, start, seconds, and the errors they met."""

    ops: list[tuple[str, float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, kind: str, work: Callable[[], None]) -> None:
        started = time.monotonic()
        try:
            work()
        except Exception as error:  # every failure counts; the test names them
            with self.lock:
                self.errors.append(f"{kind}: {type(error).__name__}: {error}")
        with self.lock:
            self.ops.append((kind, started, time.monotonic() - started))

    def between(self, start: float, end: float, *, writes: bool = False) -> list[tuple[str, float, float]]:
        """The operations started between ``start`` and ``end`` (only the writes, if asked)."""
        with self.lock:
            return [op for op in self.ops if start <= op[1] <= end and not (writes and op[0] == "read")]


@dataclass
class Locks:
    """Blocking locks seen on the hot tables: (pid, table, mode, transaction start) → first, last seen."""

    seen: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict)

    def longest(self) -> tuple[float, tuple[Any, ...] | None, str]:
        if not self.seen:
            return 0.0, None, ""
        key, (first, last, query) = max(self.seen.items(), key=lambda kv: kv[1][1] - kv[1][0])
        return last - first, key, query

    def describe(self) -> str:
        """The longest lock in words, for a failure message."""
        held, key, query = self.longest()
        if key is None:
            return "no blocking lock seen"
        pid, table, mode, _ = key
        return f"{mode} on {table} held {held:.1f} s by pid {pid}: {query!r}"


def watch_locks(url: str, load: Load, locks: Locks, me: set[int]) -> None:
    """Poll the blocking locks on the hot tables until ``load.stop`` (a thread's target)."""
    with psycopg.connect(url, autocommit=True) as db:
        while not load.stop.is_set():
            rows = db.execute(
                "SELECT l.pid, c.relname, l.mode, a.xact_start, left(a.query, 300) FROM pg_locks l "
                "JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.granted AND l.locktype = 'relation' "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND c.relname = ANY(%s) AND l.mode = ANY(%s)",
                [list(HOT_TABLES), list(BLOCKING)],
            ).fetchall()
            now = time.monotonic()
            for pid, table, mode, started, query in rows:
                if pid in me:
                    continue
                entry = locks.seen.setdefault((pid, table, mode, started), [now, now, query])
                entry[1] = now
            time.sleep(0.1)


def run_current(url: str, *args: str, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run this release's ``python <args>`` in a child process on the database at ``url``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "PIWEB_", "PG"))}
    env = {**inherited, "DJANGO_SETTINGS_MODULE": "piweb.settings", "DATABASE_URL": url, **extra}
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def step(url: str, *args: str) -> Any:
    """Run a step of ``tests/upgrade/in_database.py`` on the database at ``url``; return its answer."""
    done = run_current(url, "-m", "tests.upgrade.in_database", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def own_database(prefix: str) -> Iterator[str]:
    """A database of its own beside the test database (which stays at this release), dropped afterwards;
    yields its URL."""
    base = database_url().rsplit("/", 1)[0]
    name = f"{prefix}_{os.getpid()}"
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
