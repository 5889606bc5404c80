"""Prometheus metrics: requests by route and status, their latency, open sockets, queue lengths, runs
and compaction durations. ``/metrics`` serves them when ``PIWEB_METRICS=1``.

Several processes (daphne or uvicorn workers, Celery workers) each count what they do. With
``PROMETHEUS_MULTIPROC_DIR`` set (to one empty folder per machine, shared by its processes, emptied at
start), prometheus-client writes every process's values there and ``/metrics`` adds them up; without it,
each process reports only its own counts. Queue lengths and active runs are read at scrape time, so they
are right whichever process is scraped.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.apps import apps
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from piweb import workers

log = logging.getLogger(__name__)

__all__ = [
    "MetricsMiddleware",
    "compaction_finished",
    "metrics_view",
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


class _ScrapeTimeCollector(Collector):
    """Values read when scraped: Celery queue lengths (Redis broker) and runs queued or running."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        # A service that does not answer costs its own values, never the whole scrape.
        failed = GaugeMetricFamily(
            "piweb_scrape_failed", "1 when a value read at scrape time could not be read", labels=["part"]
        )
        try:
            lengths = _queue_lengths()
        except Exception:
            log.warning("metrics: the broker did not answer for queue lengths", exc_info=True)
            lengths, queues_failed = {}, 1
        else:
            queues_failed = 0
        queues = GaugeMetricFamily("piweb_queue_length", "Tasks waiting in a Celery queue", labels=["queue"])
        for name, length in lengths.items():
            queues.add_metric([name], length)
        yield queues
        failed.add_metric(["queues"], queues_failed)
        try:
            counts = _active_runs()
        except Exception:
            log.warning("metrics: the database did not answer for active runs", exc_info=True)
            counts, runs_failed = {}, 1
        else:
            runs_failed = 0
        active = GaugeMetricFamily("piweb_runs_active", "Agent runs queued or running", labels=["status"])
        for status, count in counts.items():
            active.add_metric([status], count)
        yield active
        failed.add_metric(["runs"], runs_failed)
        yield failed


def _active_runs() -> dict[str, int]:
    # By name: the apps that report compactions import this module, and never import the agent.
    agent_run: Any = apps.get_model("agent", "AgentRun")
    counts = {str(status): 0 for status in agent_run.ACTIVE}
    for status in agent_run.objects.filter(status__in=agent_run.ACTIVE).values_list("status", flat=True):
        counts[str(status)] += 1
    return counts


# kombu's Redis transport keeps each queue as a list under its name, plus one list per priority step.
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def _queue_names() -> list[str]:
    return sorted(
        {workers.DEFAULT_QUEUE, workers.runs_queue(os.environ), workers.operations_queue(os.environ)}
    )


def _queue_lengths() -> dict[str, int]:
    url = str(settings.CELERY_BROKER_URL or "")
    if not url.startswith(("redis://", "rediss://")):
        return {}  # the embedded file broker has no cheap count; its queues live on one machine
    import redis

    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        with client.pipeline(transaction=False) as pipe:
            for name in _queue_names():
                for suffix in _PRIORITY_SUFFIXES:
                    pipe.llen(name + suffix)
            lengths = pipe.execute()
    finally:
        client.close()
    step = len(_PRIORITY_SUFFIXES)
    return {name: sum(lengths[i * step : (i + 1) * step]) for i, name in enumerate(_queue_names())}


def _registry() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_Process())
    registry.register(_ScrapeTimeCollector())
    return registry


class _Process(Collector):
    """This process's own metrics (the default registry) under a registry of the scrape's own."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Return the metrics in Prometheus' text format; "not found" unless PIWEB_METRICS is on."""
    if not settings.PIWEB_METRICS:
        raise Http404("Metrics are off (PIWEB_METRICS=1 turns them on)")
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
