"""Celery entry point for agent runs: fetch the id, call the service."""

from __future__ import annotations

from agent import services
from agent.models import AgentRun
from core.tasks import task
from sessions_app.facade import still_writable

NO_LONGER_ALLOWED = "The requesting user may no longer change this session."


@task("agent.run_agent")
def run_agent(run_pk: int) -> str | None:
    """Execute one agent run. Redelivery is safe: a finished run is skipped, an interrupted one closed."""
    queued = (
        AgentRun.objects.select_related("requested_by")
        .filter(pk=run_pk, session__deleted_at__isnull=True)
        .first()
    )
    # Sharing may have changed since the run was queued: re-check before anything is written.
    if (
        queued is not None
        and not queued.is_finished
        and queued.requested_by_id is not None
        and not still_writable(queued.requested_by, queued.session_id)
    ):
        return services._fail(queued, NO_LONGER_ALLOWED).status
    run = services.execute_run(run_pk)
    return run.status if run is not None else None
