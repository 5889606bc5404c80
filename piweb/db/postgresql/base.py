"""Django's PostgreSQL backend, with the per-request health check done on the socket.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first query of every request that reuses
a connection: a round trip, and a statement for the server, on every API read. A connection the server
dropped while it sat idle (a restart, a crash, ``pg_terminate_backend``, an idle timeout) has data or an
end of file waiting on its socket, and an idle healthy one has nothing. So the check asks the socket
first: quiet means healthy; anything else gets Django's own ``SELECT 1`` and is closed if that fails.

With a connection pool (``OPTIONS["pool"]``, piweb's default on PostgreSQL) the pool checks a connection
each time it lends one; the same socket test spares that check's round trip on every request.
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base

__all__ = ["DatabaseWrapper", "check_pooled"]

WAITING = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


def socket_is_quiet(connection: Any) -> bool:
    """Return whether an idle psycopg connection's socket has nothing waiting (no message, no hang-up)."""
    if connection is None or connection.closed or connection.broken:
        return False
    try:
        poller = select.poll()
        poller.register(connection.pgconn.socket, WAITING)
        return not poller.poll(0)
    except (OSError, ValueError):  # no socket any more
        return False


def check_pooled(connection: Any) -> None:
    """The pool's check before it lends a connection: a quiet socket passes, anything else must answer
    an empty query (psycopg_pool's own check), or the pool replaces the connection."""
    if socket_is_quiet(connection):
        return
    from psycopg_pool import ConnectionPool

    ConnectionPool.check_connection(connection)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        options = self.settings_dict["OPTIONS"].get("pool")
        pools = self._connection_pools  # type: ignore[attr-defined]  # Django's class-level pool registry
        if options and self.alias not in pools and self.settings_dict["CONN_HEALTH_CHECKS"]:
            options = {} if options is True else options
            if "check" not in options:
                # Django's default check sends a query every time the pool lends a connection.
                self.settings_dict["OPTIONS"] = {
                    **self.settings_dict["OPTIONS"],
                    "pool": {**options, "check": check_pooled},
                }
        return super().pool

    def close_if_health_check_failed(self) -> None:
        enabled = self.health_check_enabled  # type: ignore[attr-defined]  # set by Django's base class
        done: bool = self.health_check_done  # type: ignore[has-type]  # set by Django's base class
        if self.connection is None or self.pool or not enabled or done:
            super().close_if_health_check_failed()
            return
        if self._socket_is_quiet():
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _socket_is_quiet(self) -> bool:
        """Return whether the idle connection's socket has nothing waiting (no message, no hang-up)."""
        return socket_is_quiet(self.connection)
