"""Prometheus metrics: requests by route and status, their latency, open sockets, queue lengths, runs
and compaction durations. ``/metrics`` serves them when ``PIWEB_METRICS=1``.

Several processes (daphne or uvicorn workers, Celery workers) each count what they do. With
``PROMETHEUS_MULTIPROC_DIR`` set (to one empty folder per machine, shared by its processes, emptied at
start), prometheus-client writes every process's values there and ``/metrics`` adds them up; without it,
each process reports only its own counts. The scrape itself (``piweb.metrics_view``) adds what is read at
scrape time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    Counter,
    Gauge,
    Histogram,
)

log = logging.getLogger(__name__)

__all__ = [
    "MetricsMiddleware",
    "compaction_finished",
    "run_finished",
    "socket_closed",
    "socket_opened",
]

REQUESTS = Counter(
    "piweb_http_requests",
    "HTTP requests answered, by route pattern, method and status",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "piweb_http_request_duration_seconds",
    "Time to answer an HTTP request (to the first byte of a streamed body), by route pattern",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10, 30),
)
# "livesum": in multiprocess mode, the sum over processes still running.
SOCKETS = Gauge("piweb_open_sockets", "WebSocket connections open now", multiprocess_mode="livesum")
RUNS = Counter("piweb_runs", "Agent runs finished, by status", ["status"])
COMPACTIONS = Histogram(
    "piweb_compaction_duration_seconds",
    "Time a compaction took from start to its recorded end, by reason and outcome",
    ["reason", "status"],
    buckets=(0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)


def socket_opened() -> None:
    SOCKETS.inc()


def socket_closed() -> None:
    SOCKETS.dec()


def run_finished(status: str) -> None:
    RUNS.labels(status=status).inc()


def compaction_finished(*, reason: str, status: str, seconds: float) -> None:
    COMPACTIONS.labels(reason=reason, status=status).observe(seconds)


def _route(request: HttpRequest) -> str:
    # The URL pattern, never the path: ids and tokens would make a series per session and leak tokens.
    match = getattr(request, "resolver_match", None)
    return f"/{match.route}" if match is not None and match.route else "(unmatched)"


class MetricsMiddleware:
    """Count each request and time it, labelled by its route pattern (first in MIDDLEWARE)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        started = time.monotonic()
        response = self.get_response(request)
        self._observe(request, response, started)
        return response

    async def _acall(self, request: HttpRequest) -> Any:
        started = time.monotonic()
        response = await self.get_response(request)
        self._observe(request, response, started)
        return response

    @staticmethod
    def _observe(request: HttpRequest, response: HttpResponse, started: float) -> None:
        route, method = _route(request), request.method or "GET"
        LATENCY.labels(route=route, method=method).observe(time.monotonic() - started)
        REQUESTS.labels(route=route, method=method, status=str(response.status_code)).inc()
