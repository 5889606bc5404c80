"""One way to declare a background task, and one way to queue it by name.

Every task is acknowledged late and given back to the queue when its worker dies, so a killed worker loses
nothing; a task is therefore written to be safe to run twice. No task stores a result. Each run is timed
into ``piweb_task_duration_seconds`` by task and outcome. Queues come from ``CELERY_TASK_ROUTES`` by name.

Use cases queue tasks with ``enqueue("<name>", ...)``: a service never imports its app's tasks module,
which imports the service, so there is no cycle and no lazy import.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Task, current_app, shared_task
from django.utils.module_loading import autodiscover_modules
from prometheus_client import Histogram

__all__ = ["enqueue", "task"]

log = logging.getLogger(__name__)

DURATION = Histogram(
    "piweb_task_duration_seconds",
    "Time a background task ran, by task name and outcome (done, failed)",
    ["task", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800),
)


class _Task(Task):  # type: ignore[misc]  # celery's Task is untyped
    """A task that may name what to do when it fails for good (``give_up``)."""

    give_up: Callable[..., None] | None = None

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # Called once the task has failed for good: not on a retry, and never on success.
        if self.give_up is None:
            return
        try:
            self.give_up(*args, **kwargs)
        except Exception:  # the cause may still be there (the database); the row's own expiry remains
            log.exception("%s could not record its failure", self.name)


def task(
    name: str,
    *,
    retry_on: tuple[type[BaseException], ...] = (),
    max_retries: int = 5,
    give_up: Callable[..., None] | None = None,
) -> Callable[[Callable[..., Any]], Any]:
    """Declare a Celery task named ``name``; ``retry_on``: exceptions retried with backoff; ``give_up``:
    called with the task's arguments once it failed for good (an error not retried, or retries spent),
    so the row it works on records the failure instead of staying in progress."""

    def declare(function: Callable[..., Any]) -> Any:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started, outcome = time.monotonic(), "failed"
            try:
                result = function(*args, **kwargs)
                outcome = "done"
                return result
            finally:
                DURATION.labels(task=name, outcome=outcome).observe(time.monotonic() - started)

        options: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}
        options |= {"base": _Task, "give_up": staticmethod(give_up) if give_up else None}
        if retry_on:
            options |= {"autoretry_for": retry_on, "retry_backoff": True, "max_retries": max_retries}
        return shared_task(name=name, **options)(timed)

    return declare


def enqueue(
    name: str, *args: Any, queue: str | None = None, countdown: float | None = None, **kwargs: Any
) -> None:
    """Queue the task named ``name`` (its route decides the queue unless ``queue`` is given), to run
    ``countdown`` seconds from now when given.

    Raises what the broker raises: the caller decides what a task that could not be queued means.
    """
    registry = current_app.tasks
    if name not in registry:
        autodiscover_modules("tasks")  # a process that has not imported the tasks modules yet
    options: dict[str, Any] = {"queue": queue} if queue else {}
    if countdown is not None and countdown > 0:
        options["countdown"] = countdown
    registry[name].apply_async(args=args, kwargs=kwargs, **options)
