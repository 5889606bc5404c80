"""The PostgreSQL backend checks a reused connection on its socket: no SELECT 1 per request, yet a
connection the server dropped while idle is replaced before a request uses it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db

if connection.vendor != "postgresql":
    pytest.skip("the socket health check belongs to the PostgreSQL backend", allow_module_level=True)


@pytest.fixture
def reused() -> Iterator[Any]:
    """A second connection to the test database, as a web thread holds one between requests."""
    wrapper = connections.create_connection("default")
    wrapper.settings_dict["CONN_HEALTH_CHECKS"] = True
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
