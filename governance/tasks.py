"""Governance's background work: scans of bulk writes and the daily retention sweep."""

from __future__ import annotations

from core.tasks import task
from governance import retention, scanning


@task("governance.scan_pending")
def scan_pending_task(pending_id: int) -> int:
    """Scan the entries a bulk write stored (an import too large to scan in its request)."""
    return scanning.run_pending_scan(pending_id)


@task("governance.sweep_pending_scans")
def sweep_pending_scans_task() -> int:
    """Run bulk scans whose task was lost (beat runs it hourly)."""
    return scanning.sweep_pending_scans()


@task("governance.apply_retention")
def apply_retention_task() -> int:
    """Delete the sessions their retention rules say are due (Celery beat runs it daily)."""
    return len(retention.apply_retention(actor=retention.RETENTION_WORKER))
