"""What a test needs to start servers and workers of its own: a free loopback port, the test database's
URL to hand them, and waiting until they answer. One copy for the whole suite.

The bench keeps its own (bench/metrics/procs.py): it runs without the tests on its path.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.db import connection

_HANDED_OUT: set[int] = set()
_HANDING_OUT = threading.Lock()


def free_port() -> int:
    """Return a free loopback port, never one handed out before in this process: a server given a port
    may not listen on it yet when the next one asks (two servers then met on one port).

    Parallel test workers draw from ranges of their own below the system's ephemeral ports, so two
    workers never hand out one port (a server of one would answer for the other's, still starting).
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        low = _WORKER_PORTS_FROM + int(worker[2:]) * _WORKER_PORTS_EACH
        start = random.randrange(_WORKER_PORTS_EACH)
        for offset in range(_WORKER_PORTS_EACH):
            port = low + (start + offset) % _WORKER_PORTS_EACH
            if _claim(port):
                return port
        raise RuntimeError(f"no free port left in {low}-{low + _WORKER_PORTS_EACH - 1}")
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        with _HANDING_OUT:
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


# Linux hands out ephemeral ports from 32768 up: six workers of 2,000 ports each fit below.
_WORKER_PORTS_FROM = 20000
_WORKER_PORTS_EACH = 2000


def _claim(port: int) -> bool:
    with _HANDING_OUT:
        if port in _HANDED_OUT:
            return False
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
        _HANDED_OUT.add(port)
        return True


def database_url() -> str:
    """Return the URL of the database this test runs on (pytest-django's test database), for a server
    or worker the test starts in another process."""
    db = connection.settings_dict
    auth = quote(db.get("USER") or "postgres")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    return f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def listening(port: int) -> bool:
    """Whether something accepts connections on the loopback ``port`` now."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(
    port: int, process: subprocess.Popen[bytes], log: Path | str, seconds: float = 30.0
) -> None:
    """Wait until ``process`` listens on ``port``; fail at once, quoting the end of its ``log``, if it
    exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early; see {log}:\n{Path(log).read_text()[-3000:]}")
        if listening(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the server did not listen on port {port} within {seconds}s; see {log}")


def wait_until(check: Callable[[], object], seconds: float, what: str) -> float:
    """Poll ``check`` until it is true; return the seconds it took or fail after ``seconds``.

    An error from ``check`` counts as not yet (a service coming up may refuse or fail a query first);
    the last one is chained to the timeout so a check that can never pass still says why.
    """
    started = time.monotonic()
    last_error: Exception | None = None
    while time.monotonic() - started < seconds:
        try:
            if check():
                return time.monotonic() - started
        except Exception as error:  # not ready yet may be any error at all
            last_error = error
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}") from last_error


def run_embedded(script: str, folder: Path) -> Any:
    """Run ``script`` in a child process on the embedded default (SQLite under ``folder``, in-memory
    channel layer, tasks in-process), as `make run` without a configuration; return its last line as JSON."""
    import json
    import os
    import sys

    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_", "DJANGO_"))
    }
    env.update(DJANGO_SETTINGS_MODULE="piweb.settings", PIWEB_DATA_DIR=str(folder), PIWEB_CELERY_EAGER="1")
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
