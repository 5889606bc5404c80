"""The db_append row's forked writers each get a connection of their own, as the bench runs them: pooled.

The test process itself runs unpooled (tests/conftest.py), so the writers run from a child Python process
configured as ``bench/run.py`` is (production settings, the pool on) against the test database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.procs import database_url

ROOT = Path(__file__).resolve().parents[2]

# Draws a pooled connection first, so an idle one sits in the pool when the writers fork.
SCRIPT = """
import json, sys
from bench.django_env import bench_user, setup_django
problem = setup_django(migrate=False)
assert not problem, problem
from django.db import connection
assert connection.settings_dict["OPTIONS"].get("pool"), "the bench runs with the pool on"
from bench.metrics.db import bare_session_pk, check_integrity, load_session, run_writers
from sessions_app.services import create_session
pk = create_session(actor=bench_user(), cwd="/bench/writers").pk
bare_pk = bare_session_pk()
load_session(pk)
report = {}
for name, target, bare in (("piweb", pk, False), ("bare", bare_pk, True)):
    samples = run_writers(target, 4, 5, bare=bare)
    report[name] = {"samples": len(samples), "integrity": check_integrity(target)}
print(json.dumps(report))
"""


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_forked_after_the_pool_was_used_each_store_every_append() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the bench's database rows run on PostgreSQL")
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "piweb.settings"}
    env.pop("PIWEB_DB_POOL_MAX", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("piweb", "bare"):
        # 4 writers × 5 appends: every one stored, seq gapless, ids unique.
        assert report[name] == {"samples": 20, "integrity": [0, 0, 20]}, (name, done.stderr[-3000:])
