"""Background work of hooks: each delivery's attempts, and the sweep of deliveries whose task was lost."""

from __future__ import annotations

from core.tasks import task
from hooks import delivery


@task("hooks.deliver")
def deliver(delivery_id: int) -> str:
    """Make one attempt at a delivery (a retry queues the next task itself)."""
    return delivery.deliver(delivery_id)


@task("hooks.sweep_due")
def sweep_due() -> int:
    """Queue the deliveries overdue by more than the grace (the beat's minute)."""
    return delivery.sweep_due()
