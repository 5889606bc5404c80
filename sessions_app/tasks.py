"""Celery tasks of sessions_app: purge deleted sessions (thin adapters over ``services.purging``).

Both are acknowledged late and safe to run twice or after a crash: a purge deletes only what is left.
They go to the default queue, which the operations worker serves (``CELERY_TASK_ROUTES``), never to runs.
"""

from __future__ import annotations

from typing import Any

from celery.signals import worker_ready

from core.actors import PURGE_WORKER
from core.tasks import task
from sessions_app.services import purging


@task("sessions.purge_deleted_session")
def purge_deleted_session(session_id: int, batch: int = purging.ENTRY_BATCH) -> bool:
    """Delete the rows of a session its owner deleted; False when there was nothing left to purge."""
    return purging.purge_session(session_id, actor=PURGE_WORKER, batch=batch)


@task("sessions.sweep_deleted_sessions")
def sweep_deleted_sessions() -> int:
    """Finish every purge left unfinished (a worker killed mid-purge, a purge that could not be queued)."""
    return purging.purge_deleted_sessions(actor=PURGE_WORKER)


@worker_ready.connect(dispatch_uid="piweb-sweep-deleted-sessions")
def sweep_when_a_worker_starts(sender: Any, **kwargs: Any) -> None:
    """A worker that serves the sweep's queue queues one sweep as it starts (runs workers do not)."""
    app = sender.app
    queue = app.amqp.router.route({}, sweep_deleted_sessions.name)["queue"].name
    if queue in app.amqp.queues.consume_from:
        sweep_deleted_sessions.delay()
