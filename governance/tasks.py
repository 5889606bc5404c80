"""Governance's background work: scans of bulk imports and the daily retention sweep."""

from __future__ import annotations

from celery import shared_task

from . import retention, scanning


@shared_task(name="governance.scan_session")
def scan_session_task(session_id: int) -> int:
    """Scan a session's entries that were not scanned yet (after a bulk import)."""
    return scanning.scan_session(session_id)


@shared_task(name="governance.apply_retention")
def apply_retention_task() -> int:
    """Delete the sessions their retention rules say are due (Celery beat runs it daily)."""
    return len(retention.apply_retention(actor=retention.RETENTION_WORKER))
