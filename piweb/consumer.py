"""The workers' consumer: a task of a kind this worker does not know goes back to its queue, not away.

Celery rejects such a message for good (and records the task as failed), so during a rolling upgrade an
older worker that happened to receive a task type only the new release has dropped it. Here the worker
holds it for a moment, then hands it back to the end of its queue (``reject(requeue=True)``), where a
worker that knows it takes it; until one runs, the message goes round without being lost. The pause keeps
an old worker that receives it again from spinning on it.

Settings name it as ``CELERY_WORKER_CONSUMER``.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer

__all__ = ["HOLD_SECONDS", "Consumer"]

logger = logging.getLogger("piweb.workers")

HOLD_SECONDS = 1.0  # how long an unknown task waits in this worker before it goes back to its queue


def _hand_back(message: Any) -> None:
    if message.acknowledged:
        return
    try:
        message.reject(requeue=True)
    except Exception as exc:  # broker away: it hands the message out again after the visibility timeout
        logger.warning("could not hand back an unknown task (%s); the broker will redeliver it", exc)


class Consumer(CeleryConsumer):
    def on_unknown_task(self, body: Any, message: Any, exc: Exception) -> None:
        headers = getattr(message, "headers", None) or {}
        name = headers.get("task") or "?"
        logger.warning(
            "unknown task %s (id %s): handed back to its queue in %g s for a worker that knows it",
            name,
            headers.get("id", "?"),
            HOLD_SECONDS,
        )
        self.timer.call_after(HOLD_SECONDS, _hand_back, (message,))
