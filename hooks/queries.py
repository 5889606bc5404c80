"""Scoped reads of hooks: a hook's delivery log, a page at a time, for those who manage the hook."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from core.actors import Actor
from hooks.domain.events import EVENTS
from hooks.models import Delivery, Hook
from hooks.services import hooks_of, managed_hook

__all__ = ["PAGE", "delivery_body", "delivery_log", "hook_body", "hook_list"]

PAGE = 50


def hook_body(hook: Hook, *, failed: int = 0, pending: int = 0) -> dict[str, Any]:
    return {
        "id": hook.pk,
        "name": hook.name,
        "url": hook.url,
        "events": list(hook.events),
        "format": hook.format,
        "active": hook.active,
        "team": {"id": hook.team_id, "name": hook.team.name} if hook.team is not None else None,
        "createdAt": hook.created_at.isoformat(),
        "failingSince": hook.failing_since.isoformat() if hook.failing_since else None,
        "lastDeliveredAt": hook.last_delivered_at.isoformat() if hook.last_delivered_at else None,
        "failedDeliveries": failed,
        "pendingDeliveries": pending,
    }


def hook_list(actor: Actor, *, team_id: int | None = None) -> list[dict[str, Any]]:
    """Return the actor's personal hooks, or a team's (its owners only), with their delivery counts."""
    hooks = hooks_of(actor, team_id=team_id).annotate(
        failed=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.FAILED)),
        pending=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.PENDING)),
    )
    return [hook_body(h, failed=h.failed, pending=h.pending) for h in hooks]


def delivery_body(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "deliveryId": str(delivery.public_id),
        "event": delivery.event,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "createdAt": delivery.created_at.isoformat(),
        "deliveredAt": delivery.delivered_at.isoformat() if delivery.delivered_at else None,
        "nextAttemptAt": delivery.next_attempt_at.isoformat()
        if delivery.next_attempt_at and delivery.status == Delivery.Status.PENDING
        else None,
        "lastStatusCode": delivery.last_status_code,
        "lastError": delivery.last_error,
        "lastResponse": delivery.last_response,
        "responseMs": delivery.response_ms,
        "replayOf": delivery.replay_of_id,
        "payload": delivery.payload,
    }


def delivery_log(
    actor: Actor, hook_id: int, *, before: int | None = None
) -> tuple[Hook, list[dict[str, Any]], int | None]:
    """Return the hook, a page of its deliveries (newest first, older than ``before``) and the id to ask
    for the next page with (None on the last)."""
    hook = managed_hook(actor, hook_id)
    rows = Delivery.objects.filter(hook=hook).order_by("-pk")
    if before is not None:
        rows = rows.filter(pk__lt=before)
    page = list(rows[: PAGE + 1])
    following = page[PAGE - 1].pk if len(page) > PAGE else None
    return hook, [delivery_body(d) for d in page[:PAGE]], following


def event_choices() -> list[dict[str, str]]:
    return [{"name": name, "label": label} for name, label in EVENTS.items()]
