"""The PostgreSQL backend checks a reused connection on its socket: no SELECT 1 per request, yet a
connection the server dropped while idle is replaced before a request uses it, whether connections are
pooled (the default) or kept per thread (``PIWEB_DB_POOL_MAX=0``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

from piweb.config import database_pool

pytestmark = pytest.mark.django_db

if connection.vendor != "postgresql":
    pytest.skip("the socket health check belongs to the PostgreSQL backend", allow_module_level=True)


@pytest.fixture
def reused() -> Iterator[Any]:
    """A second connection to the test database, as a web thread holds one between requests (no pool)."""
    wrapper = connections.create_connection("default")
    options = {k: v for k, v in wrapper.settings_dict["OPTIONS"].items() if k != "pool"}
    wrapper.settings_dict = {
        **wrapper.settings_dict,
        "OPTIONS": options,
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
    wrapper.ensure_connection()
    try:
        yield wrapper
    finally:
        wrapper.close()


def backend_pid(wrapper: Any) -> int:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def next_request(wrapper: Any) -> None:
    """What Django does between requests: the next one checks the connection before its first query."""
    wrapper.close_if_unusable_or_obsolete()
    assert wrapper.health_check_done is False


def test_a_healthy_idle_connection_is_reused_without_a_round_trip(reused: Any) -> None:
    assert type(reused).__module__ == "piweb.db.postgresql.base"
    pid = backend_pid(reused)
    next_request(reused)
    checks: list[bool] = []
    reused.is_usable = lambda: checks.append(True) or True  # Django's check: SELECT 1
    assert backend_pid(reused) == pid
    assert checks == []
    assert reused.health_check_done is True


def test_a_connection_the_server_dropped_is_replaced_before_the_request_uses_it(reused: Any) -> None:
    pid = backend_pid(reused)
    next_request(reused)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while reused._socket_is_quiet() and time.monotonic() < deadline:
        time.sleep(0.01)  # the server closes the socket a moment after it is told to
    # The request's first query works, on a new connection.
    assert backend_pid(reused) != pid


POOL_NAME = "piweb-pool-under-test"


def _pooled() -> Any:
    """A connection to the test database drawn from a pool configured as a server process's is."""
    wrapper = connections.create_connection("default")
    pool = database_pool({"PIWEB_DB_POOL_MAX": "2"})
    wrapper.settings_dict = {
        **wrapper.settings_dict,
        # Named, so the test ends this pool's connections and nobody else's (tests run in parallel).
        "OPTIONS": {**wrapper.settings_dict["OPTIONS"], "pool": pool, "application_name": POOL_NAME},
        "CONN_MAX_AGE": 0,
    }
    return wrapper


def test_a_pooled_connection_the_server_dropped_is_replaced_before_a_request_uses_it() -> None:
    # The test process itself runs unpooled (tests/conftest.py); servers pool as this one does.
    first = _pooled()
    try:
        pid = backend_pid(first)
        first.close()  # back to the pool
        with connection.cursor() as cursor:
            # Every idle connection of the pool goes, the one just handed back among them.
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = %s AND state = 'idle'",
                [POOL_NAME],
            )
            assert cursor.fetchone()[0] >= 1
        time.sleep(0.2)  # the server closes the sockets a moment after it is told to
        again = _pooled()
        try:
            assert backend_pid(again) != pid
        finally:
            again.close()
    finally:
        first.close_pool()
