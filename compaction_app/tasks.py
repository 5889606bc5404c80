"""Celery tasks for compaction and branch summaries: fetch the run, call its service.

Tasks are acknowledged late and may run more than once (a redelivery after a worker died, a broker
hiccup). That is safe by construction: the run row is locked and re-checked before anything is
written, and its status changes in the same transaction as the entry it records.
"""

from __future__ import annotations

from compaction_app.models import CompactionRun
from compaction_app.services import compact_session, fail_run, summarize_and_navigate
from core.actors import COMPACTION_WORKER
from core.tasks import task
from sessions_app.facade import still_writable

NO_LONGER_ALLOWED = "The requesting user may no longer change this session."


def _still_allowed(run: CompactionRun) -> bool:
    """Return whether the run's requester may still write; sharing may have changed since it was queued."""
    return run.requested_by_id is None or still_writable(run.requested_by, run.session_id)


@task("compaction_app.tasks.run_compaction")
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


@task("compaction_app.tasks.run_branch_summary")
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
