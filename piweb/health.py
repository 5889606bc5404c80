"""Probes for a load balancer or an orchestrator: is the process up, and can it serve.

``/healthz`` answers from the process alone (no database, no Redis), so a slow database never gets a
healthy process restarted. ``/readyz`` asks each service a request needs (the database, the channel
layer, the Celery broker) with a short timeout and answers 503 naming each one that did not answer, or
that answered but cannot serve (a read-only database); it names the running release (``version``).
Where tasks need workers (``PIWEB_READY_WORKERS``), it also fails while a queue has had no live worker
for ``PIWEB_WORKER_STALE_SECONDS`` (``piweb.worker_heartbeat``): tasks queued then would wait forever.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection, connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from piweb import __version__, worker_heartbeat
from piweb.celery import app as celery_app

__all__ = ["healthz", "readyz"]

TIMEOUT = 3.0  # seconds each service has to answer


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Return 200 while the process serves requests; touches nothing else."""
    return JsonResponse({"status": "ok"})


def _database() -> None:
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute("SELECT 1")
            cursor.fetchone()
            return
        # A replica (or a primary turned read-only) answers SELECT 1 but refuses every write: a web
        # process sent there would fail each request that writes, so it is not ready.
        cursor.execute("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError("the database answered nothing")
    in_recovery, read_only = row
    if in_recovery:
        raise RuntimeError("the database is a read-only replica (pg_is_in_recovery)")
    if read_only == "on":
        raise RuntimeError("the database is read-only (transaction_read_only is on)")


def _channel_layer() -> None:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer is configured")

    async def round_trip() -> None:
        # A message to a channel of our own and back: the layer's store answered both ways.
        async with asyncio.timeout(TIMEOUT):
            channel = await layer.new_channel("readyz.")
            token = uuid.uuid4().hex
            await layer.send(channel, {"type": "readyz.ping", "token": token})
            message = await layer.receive(channel)
        if message.get("token") != token:
            raise RuntimeError("the channel layer returned another message")

    async_to_sync(round_trip)()


def _broker() -> None:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=TIMEOUT)


def _workers() -> None:
    queues = sorted({route["queue"] for route in settings.CELERY_TASK_ROUTES.values()})
    silent = worker_heartbeat.silent_queues(queues)
    if silent:
        stale = f"{settings.PIWEB_WORKER_STALE_SECONDS:g}"
        raise RuntimeError(f"no live worker has served {', '.join(silent)} in the last {stale} s")


CHECKS: dict[str, Callable[[], None]] = {
    "database": _database,
    "channel_layer": _channel_layer,
    "broker": _broker,
    "workers": _workers,
}


def _checks() -> dict[str, Callable[[], None]]:
    if settings.PIWEB_READY_WORKERS:
        return CHECKS
    return {name: check for name, check in CHECKS.items() if name != "workers"}


def _run(check: Callable[[], None]) -> dict[str, object]:
    started = time.monotonic()
    try:
        check()
    except Exception as exc:  # any failure means "not ready"; the reason goes to the operator
        result: dict[str, object] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    else:
        result = {"ok": True}
    finally:
        # A thread of its own: give its database connection back to the pool now.
        connections.close_all()
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


@require_safe
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Return 200 when every service answers, else 503 naming what failed and why.

    The checks run side by side and the answer comes within ``TIMEOUT`` seconds: a service that has not
    answered by then counts as failed (a database whose pool waits would otherwise hold the probe 20 s).
    """
    checks_to_run = _checks()
    pool = ThreadPoolExecutor(max_workers=len(checks_to_run), thread_name_prefix="readyz")
    futures = {name: pool.submit(_run, check) for name, check in checks_to_run.items()}
    done, _ = wait(futures.values(), timeout=TIMEOUT + 0.5)
    pool.shutdown(wait=False)
    checks: dict[str, dict[str, object]] = {}
    for name, future in futures.items():
        if future in done:
            checks[name] = future.result()
        else:
            checks[name] = {"ok": False, "error": f"no answer within {TIMEOUT:g} s"}
    failed = [name for name, result in checks.items() if not result["ok"]]
    if failed:
        error = f"not ready: {', '.join(failed)} did not answer"
        body = {
            "status": "unavailable",
            "error": error,
            "failed": failed,
            "checks": checks,
            "version": __version__,
        }
        return JsonResponse(body, status=503)
    return JsonResponse({"status": "ok", "checks": checks, "version": __version__})
