"""Celery tasks for compaction and branch summaries: fetch the run, call its service.

Tasks are acknowledged late and may run more than once (a redelivery after a worker died, a broker
hiccup). That is safe by construction: the run row is locked and re-checked before anything is
written, and its status changes in the same transaction as the entry it records.

A database that fails under a task (its connection dies while the summarizer answers) gets the task
retried with backoff; once retries are spent the run records the failure, and should the database still
be away then, the run expires (``expire_stale_operations``). None stays "running" for good.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

from compaction_app.models import CompactionRun
from compaction_app.services import (
    INTERRUPTED,
    compact_session,
    expire_stale_operations,
    fail_run,
    summarize_and_navigate,
)
from core.actors import COMPACTION_WORKER
from core.tasks import task
from sessions_app.facade import still_writable

NO_LONGER_ALLOWED = "The requesting user may no longer change this session."
DATABASE_FAILURES = (OperationalError, InterfaceError)


def _interrupted(run_id: int) -> None:
    """Record that the run's task failed for good (it was not retried, or its retries are spent)."""
    run = CompactionRun.objects.filter(pk=run_id).first()
    if run is not None and not run.is_finished:
        fail_run(run, INTERRUPTED, actor=COMPACTION_WORKER)


def _still_allowed(run: CompactionRun) -> bool:
    """Return whether the run's requester may still write; sharing may have changed since it was queued."""
    return run.requested_by_id is None or still_writable(run.requested_by, run.session_id)


@task("compaction_app.tasks.run_compaction", retry_on=DATABASE_FAILURES, give_up=_interrupted)
def run_compaction(run_id: int) -> str:
    """Run a queued compaction; return its final status."""
    run = (
        CompactionRun.objects.select_related("session", "requested_by")
        .filter(pk=run_id, session__deleted_at__isnull=True)
        .first()
    )
    if run is None:  # the session was deleted meanwhile
        return "missing"
    if run.is_finished:
        return run.status
    if not _still_allowed(run):
        return fail_run(run, NO_LONGER_ALLOWED, actor=COMPACTION_WORKER).status
    outcome = compact_session(
        session=run.session,
        reason=run.reason,
        actor=COMPACTION_WORKER,
        custom_instructions=run.custom_instructions,
        will_retry=run.will_retry,
        requested_by=run.requested_by,
        run=run,
    )
    return outcome.status


@task("compaction_app.tasks.run_branch_summary", retry_on=DATABASE_FAILURES, give_up=_interrupted)
def run_branch_summary(run_id: int) -> str:
    """Run a queued navigation with branch summary; return its final status."""
    run = (
        CompactionRun.objects.select_related("requested_by")
        .filter(pk=run_id, session__deleted_at__isnull=True)
        .first()
    )
    if run is None:
        return "missing"
    if run.is_finished:
        return run.status
    if not _still_allowed(run):
        return fail_run(run, NO_LONGER_ALLOWED, actor=COMPACTION_WORKER).status
    return summarize_and_navigate(run, actor=COMPACTION_WORKER).status


@task("compaction_app.tasks.expire_stale_operations")
def expire_stale() -> int:
    """End the operations nothing will end any more (beat, every few minutes); return how many."""
    return expire_stale_operations()
