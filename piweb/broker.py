"""kombu's Redis transport, made to survive a Redis restart while a task is running.

When the broker connection breaks, Celery's consumer first collects the connection (which forgets its
address), closes it, and connects again. Two steps then needed the forgotten connection and raised an
``AttributeError`` that Celery does not expect there, so it stopped the worker ("Unrecoverable error")
where it should have carried on: closing the channel, which hands the worker's unacknowledged tasks back
(``'NoneType' object has no attribute 'hostname'``), and acknowledging a task that was running during the
failure, once it ends (``... no attribute 'client'``).

Here a channel whose connection is gone leaves those tasks to the broker: Redis keeps them in its set of
unacknowledged tasks and hands them out again after the visibility timeout
(``PIWEB_CELERY_VISIBILITY_TIMEOUT``), as it does for a worker that was killed. Tasks are safe to run
twice (``core.tasks``), so a task that finished during the failure and runs again does nothing.

Settings name it as ``CELERY_BROKER_TRANSPORT`` whenever the broker is Redis.
"""

from __future__ import annotations

from typing import Any, cast

from kombu.transport import redis

__all__ = ["Transport"]


class QoS(redis.QoS):
    def _connection_gone(self) -> bool:
        connection = getattr(self.channel, "connection", None)
        return connection is None or connection.client is None

    def _forget(self, delivery_tag: Any) -> None:
        # kombu's stubs leave the delivered map untyped (None until the QoS starts).
        cast("dict[Any, Any]", self._delivered).pop(delivery_tag, None)

    def restore_unacked(self, client: Any = None) -> None:
        if client is None and self._connection_gone():
            return
        super().restore_unacked(client)

    def ack(self, delivery_tag: Any) -> None:
        if self._connection_gone():
            self._forget(delivery_tag)
            return
        super().ack(delivery_tag)

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        if self._connection_gone():
            self._forget(delivery_tag)
            return
        super().reject(delivery_tag, requeue=requeue)


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    Channel = Channel
