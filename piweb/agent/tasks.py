"""Celery entry point for agent runs: fetch the id, call the service."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="agent.run_agent", acks_late=True, reject_on_worker_lost=True)
def run_agent(run_pk: int) -> str | None:
    """Execute one agent run. Redelivery is safe: a finished run is skipped, an interrupted one closed."""
    run = services.execute_run(run_pk)
    return run.status if run is not None else None
