"""``/metrics``: every process's counters (``core.metrics``) plus what is read when scraped.

Queue lengths and active runs are read at scrape time, so they are right whichever process is scraped.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from agent.facade import AgentRun
from piweb import workers

log = logging.getLogger(__name__)

__all__ = ["metrics_view"]


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
    counts = {str(status): 0 for status in AgentRun.ACTIVE}
    for status in AgentRun.objects.filter(status__in=AgentRun.ACTIVE).values_list("status", flat=True):
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


def _authorized(request: HttpRequest) -> bool:
    """Whether the request may read the metrics: always without PIWEB_METRICS_TOKEN, else only with it."""
    expected = str(settings.PIWEB_METRICS_TOKEN or "")
    if not expected:
        return True
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Compared in constant time, so the answer's timing tells nothing of how much of a guess was right.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Return the metrics in Prometheus' text format; "not found" unless PIWEB_METRICS is on, and 401
    without the bearer token when PIWEB_METRICS_TOKEN is set."""
    if not settings.PIWEB_METRICS:
        raise Http404("Metrics are off (PIWEB_METRICS=1 turns them on)")
    if not _authorized(request):
        refused = HttpResponse(
            "The metrics need the scrape token: Authorization: Bearer <PIWEB_METRICS_TOKEN>.\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
