"""A small team's day against a real machine's processes stays within the documented connection budget.

Two daphne processes and ``python -m piweb.workers`` on a private PostgreSQL and Redis, with readers,
syncing clients, agent runs against the loopback provider and open sockets all at once (the bench's
``team_day`` scenario, scaled down and not timed). Every request must succeed, every socket that
stayed open must hear every commit, every run must finish, and the application's connections, sampled
from ``pg_stat_activity``, never pass README "Connection budget".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import generate
from bench.metrics.teamday import Plan, connection_budget, run_team_day
from tests.faults.stack import missing_tools

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_small_team_day_has_no_errors_and_stays_within_the_connection_budget(tmp_path: Path) -> None:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    specs = [generate.SessionSpec(entries=60, seed=generate.DEFAULT_SEED + 800 + i) for i in range(3)]
    files = [generate.ensure_session(spec, tmp_path) for spec in specs]
    plan = Plan(
        readers=12,
        syncers=3,
        runs=4,
        sockets=24,
        seconds=15,
        think_s=(0.5, 2.0),
        sync_every_s=(1.0, 2.0),
        provider_s=1.0,
        read_sessions=len(specs),
        read_entries=60,
        sync_start_entries=40,
    )
    files = [
        generate.ensure_session(
            generate.SessionSpec(entries=60, seed=generate.DEFAULT_SEED + 800 + i), tmp_path
        )
        for i in range(plan.read_sessions)
    ]
    # Small pools, so the load needs more connections than one process may hold.
    env = {"PIWEB_DB_POOL_MAX": "3", "PIWEB_WORKER_CONCURRENCY": "1"}
    tally, budget, logs = run_team_day(plan, tmp_path / "day", [f.path for f in files], extra_env=env)
    # Two web processes and one runs worker of 3 each; the operation process and its parent 2 each.
    assert budget == connection_budget(env, web=2) == 3 * 3 + 2 * 2
    assert tally.error_count == 0, (tally.errors, tally.examples, logs)
    assert tally.runs_started > 0 and tally.runs_done == tally.runs_started, tally.run_statuses
    assert tally.expected_events > 0 and tally.missed_events == 0, tally.examples
    assert tally.sockets_dropped == tally.sockets_failed == 0
    assert tally.latencies.get("api: search") and len(tally.latencies["sync: push"]) > plan.syncers
    assert 0 < tally.peak_connections <= budget, tally.connection_samples
