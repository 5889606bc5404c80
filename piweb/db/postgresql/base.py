"""Django's PostgreSQL backend, with the per-request health check done on the socket.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first query of every request that reuses
a connection: a round trip, and a statement for the server, on every API read. A connection the server
dropped while it sat idle (a restart, a crash, ``pg_terminate_backend``, an idle timeout) has data or an
end of file waiting on its socket, and an idle healthy one has nothing. So the check asks the socket
first: quiet means healthy; anything else gets Django's own ``SELECT 1`` and is closed if that fails.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base

__all__ = ["DatabaseWrapper"]

WAITING = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        if self.connection is None or self.pool or not self.health_check_enabled or self.health_check_done:
            super().close_if_health_check_failed()
            return
        if self._socket_is_quiet():
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _socket_is_quiet(self) -> bool:
        """Return whether the idle connection's socket has nothing waiting (no message, no hang-up)."""
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            poller = select.poll()
            poller.register(connection.pgconn.socket, WAITING)
            return not poller.poll(0)
        except (OSError, ValueError):  # no socket any more
            return False
