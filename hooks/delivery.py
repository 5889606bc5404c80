"""Sending deliveries: one attempt at a time, outside any request, with its outcome on the row.

An attempt claims its row (its next attempt time moves past the attempt's own timeout), so the task and
the sweep never send one delivery twice at once. A failed attempt is tried again after an exponential
backoff with jitter (``domain.backoff``), by a task queued with that delay; one still failing
``PIWEB_HOOKS_GIVE_UP_SECONDS`` after its event is marked failed. The minute's sweep queues every pending
delivery overdue by more than ``PIWEB_HOOKS_SWEEP_GRACE_SECONDS`` (its task lost with the broker, or with
a worker killed mid-attempt), so no delivery is lost. A hook that keeps failing stays active and shows
since when it fails; its first delivery that succeeds again sends at once what waited out a backoff.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.secret_box import SealedSecret
from core.tasks import enqueue
from hooks.domain import events as kinds
from hooks.domain import slack
from hooks.domain.backoff import Backoff
from hooks.domain.signing import signature
from hooks.models import Delivery, Hook
from hooks.services import may_hear, queue_deliveries
from hooks.targets import InvalidTarget, check_address

__all__ = ["backoff", "body_of", "deliver", "sweep_due"]

log = logging.getLogger(__name__)

EARLY = timedelta(seconds=0.5)  # a task run a little early (clocks, countdown rounding) still attempts
LEASE_EXTRA = 30.0  # seconds an attempt's claim outlasts its timeout
RESPONSE_CHARS = 500  # the start of an answer kept in the log
SWEEP_BATCH = 1000


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    status_code: int | None
    error: str
    response: str
    ms: int | None


def backoff() -> Backoff:
    return Backoff(
        first=settings.PIWEB_HOOKS_BACKOFF_FIRST_SECONDS,
        most=settings.PIWEB_HOOKS_BACKOFF_MAX_SECONDS,
        give_up=settings.PIWEB_HOOKS_GIVE_UP_SECONDS,
    )


def _lease() -> float:
    return float(settings.PIWEB_HOOKS_TIMEOUT_SECONDS) + LEASE_EXTRA


def body_of(hook: Hook, payload: dict[str, object]) -> bytes:
    """Return the bytes a hook receives for a payload, in the hook's format."""
    value = slack.message(payload) if hook.format == Hook.Format.SLACK else payload
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def deliver(delivery_id: int) -> str:
    """Make one attempt at a due delivery; return what happened (for the task's log)."""
    now = timezone.now()
    with transaction.atomic():
        found = (
            Delivery.objects.select_for_update(of=("self",), skip_locked=True)
            .select_related("hook", "hook__owner")
            .filter(pk=delivery_id, status=Delivery.Status.PENDING)
            .first()
        )
        if found is None:
            return "gone"  # sent, given up, deleted, or being attempted by another worker right now
        delivery, hook = found, found.hook
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + EARLY:
            return "not due"
        if not hook.active and delivery.event != kinds.PING:
            return "paused"  # it waits; resuming the hook queues it again
        if delivery.session_id is not None and not may_hear(hook, delivery.session_id):
            # Removed from the team, or the session unshared since: nothing more is said of it.
            delivery.status = Delivery.Status.CANCELLED
            delivery.last_error = "The hook's recipient may no longer read this session."
            delivery.next_attempt_at = None
            delivery.save(update_fields=["status", "last_error", "next_attempt_at"])
            return "cancelled"
        delivery.attempts += 1
        delivery.next_attempt_at = now + timedelta(seconds=_lease())
        delivery.attempt_started_at = now
        delivery.save(update_fields=["attempts", "next_attempt_at", "attempt_started_at"])
    outcome = _attempt(hook, delivery)
    return _record(delivery, outcome)


_clients: dict[tuple[int, float], httpx.Client] = {}


def _client() -> httpx.Client:
    """Return this process's client: making one costs some 50 ms (its TLS context), which a worker
    catching up after an outage would pay per attempt; it also keeps connections to a receiver open."""
    key = (os.getpid(), float(settings.PIWEB_HOOKS_TIMEOUT_SECONDS))  # a forked child makes its own
    found = _clients.get(key)
    if found is None:
        found = _clients[key] = httpx.Client(timeout=key[1], follow_redirects=False)
    return found


def _attempt(hook: Hook, delivery: Delivery) -> Outcome:
    if isinstance(hook.secret, SealedSecret):
        return Outcome(
            False, None, "The hook's secret cannot be decrypted (PIWEB_SECRETS_KEY changed).", "", None
        )
    body = body_of(hook, delivery.payload)
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "piweb-hooks",
        "X-Piweb-Event": delivery.event,
        "X-Piweb-Delivery": str(delivery.public_id),
        "X-Piweb-Timestamp": str(stamp),
        "X-Piweb-Signature": signature(hook.secret, stamp, body),
    }
    started = time.monotonic()
    try:
        check_address(hook.url)
        with _client().stream("POST", hook.url, content=body, headers=headers) as answer:
            start = b""
            for chunk in answer.iter_bytes():
                start += chunk
                if len(start) >= RESPONSE_CHARS:
                    break
            ms = round((time.monotonic() - started) * 1000)
            text = start.decode("utf-8", "replace")[:RESPONSE_CHARS]
            ok = 200 <= answer.status_code < 300
            error = "" if ok else f"HTTP {answer.status_code}"
            return Outcome(ok, answer.status_code, error, text, ms)
    except InvalidTarget as exc:
        return Outcome(False, None, str(exc), "", None)
    except httpx.HTTPError as exc:
        ms = round((time.monotonic() - started) * 1000)
        return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:RESPONSE_CHARS], "", ms)


def _record(delivery: Delivery, outcome: Outcome) -> str:
    now = timezone.now()
    fields: dict[str, Any] = {
        "last_status_code": outcome.status_code,
        "last_error": outcome.error,
        "last_response": outcome.response,
        "response_ms": outcome.ms,
        "attempt_started_at": None,
    }
    rules = backoff()
    with transaction.atomic():
        if outcome.ok:
            fields |= {"status": Delivery.Status.DELIVERED, "delivered_at": now, "next_attempt_at": None}
            recovered = Hook.objects.filter(pk=delivery.hook_id, failing_since__isnull=False).update(
                failing_since=None, last_delivered_at=now
            )
            if recovered:
                _wake_waiting(delivery, now)
            else:
                Hook.objects.filter(pk=delivery.hook_id).update(last_delivered_at=now)
            result = "delivered"
        elif rules.exhausted((now - delivery.created_at).total_seconds()):
            fields |= {"status": Delivery.Status.FAILED, "next_attempt_at": None}
            result = "failed"
        else:
            delay = rules.delay(delivery.attempts)
            fields["next_attempt_at"] = now + timedelta(seconds=delay)
            transaction.on_commit(lambda: _queue_retry(delivery.pk, delay))
            result = "retry"
        if not outcome.ok and delivery.event != kinds.PING:
            Hook.objects.filter(pk=delivery.hook_id, failing_since__isnull=True).update(failing_since=now)
        Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.PENDING).update(**fields)
    return result


def _wake_waiting(sent: Delivery, now: Any) -> None:
    """The hook's endpoint answers again: what waits out a backoff goes now, oldest first, instead of up
    to ``PIWEB_HOOKS_BACKOFF_MAX_SECONDS`` later (a batch at a time; the sweep sends any beyond it)."""
    # One being attempted right now is left alone, so no receiver gets it twice at once.
    under_way = Q(attempt_started_at__gt=now - timedelta(seconds=_lease()))
    waiting = (
        Delivery.objects.filter(hook_id=sent.hook_id, status=Delivery.Status.PENDING, next_attempt_at__gt=now)
        .exclude(pk=sent.pk)
        .exclude(under_way)
    )
    ids = list(waiting.order_by("created_at", "pk").values_list("pk", flat=True)[:SWEEP_BATCH])
    if ids:
        Delivery.objects.filter(pk__in=ids, next_attempt_at__gt=now).exclude(under_way).update(
            next_attempt_at=now
        )
        transaction.on_commit(lambda: queue_deliveries(ids))


def _queue_retry(delivery_id: int, delay: float) -> None:
    try:
        enqueue("hooks.deliver", delivery_id, countdown=delay)
    except Exception:
        log.warning("the retry of hook delivery %s was not queued; the sweep will send it", delivery_id)


def sweep_due() -> int:
    """Queue the pending deliveries of active hooks overdue by more than the grace (their task was lost);
    return how many. Each is not swept again before another grace has passed."""
    now = timezone.now()
    grace = timedelta(seconds=settings.PIWEB_HOOKS_SWEEP_GRACE_SECONDS)
    overdue = Delivery.objects.filter(
        status=Delivery.Status.PENDING, next_attempt_at__lte=now - grace, hook__active=True
    ).order_by("next_attempt_at")
    ids = list(overdue.values_list("pk", flat=True)[:SWEEP_BATCH])
    if not ids:
        return 0
    Delivery.objects.filter(pk__in=ids).update(next_attempt_at=now)
    queue_deliveries(ids)
    return len(ids)
