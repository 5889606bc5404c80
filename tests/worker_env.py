"""Parallel test workers (pytest-xdist) each get a Redis database of their own.

Loaded with ``-p`` (pyproject's addopts), so it runs before Django reads its settings. pytest-django
already gives each worker a database of its own (``test_piweb_gw1``); the broker, the channel layer and
the cache share Redis, so a second worker moves one database up (the background lane takes the one
below, see the Makefile). The first worker, and a run without workers, keep ``REDIS_URL`` as it is.
"""

from __future__ import annotations

import os

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_url = os.environ.get("REDIS_URL", "")
_base, _, _db = _url.rpartition("/")
if _worker.startswith("gw") and _worker != "gw0" and _url and _db.isdigit():
    os.environ["REDIS_URL"] = f"{_base}/{(int(_db) + int(_worker[2:])) % 16}"

# The suite's own process runs no Celery worker: its /readyz would always name the workers. Tests of
# that check start servers with an environment of their own (tests/faults/test_worker_group.py).
os.environ.setdefault("PIWEB_READY_WORKERS", "0")
