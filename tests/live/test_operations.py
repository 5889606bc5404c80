"""Operations on real servers: the probes, Prometheus metrics across processes, and JSON logs with
request ids that keep secrets out."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from asgiref.sync import async_to_sync

import piweb
from agent.models import AgentRun
from tests.factories import conversation, store
from tests.procs import database_url

from .servers import AsgiServer, PrivateRedis, open_socket, running, server_env, token_for


def _sample(text: str, name: str, **labels: str) -> float | None:
    """Return the value of one Prometheus sample (labels matched exactly), or None when absent."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        match = re.fullmatch(r"([a-zA-Z_:]+)(?:\{(.*)\})? (\S+)", line)
        if match is None or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if found == labels:
            return float(match.group(3))
    return None


def test_probes_and_metrics_add_up_across_processes(tmp_path: Path, owner: Any, stored: Any) -> None:
    shared = tmp_path / "prometheus"
    shared.mkdir()
    cache = PrivateRedis(tmp_path)
    with running(cache):
        env = server_env(
            cache.url,
            PIWEB_METRICS="1",
            PROMETHEUS_MULTIPROC_DIR=str(shared),
            PIWEB_CELERY_EAGER="1",
            PIWEB_COMPACTION='{"keepRecentTokens": 300}',
        )
        first, second = AsgiServer(env, tmp_path, "web1"), AsgiServer(env, tmp_path, "web2")
        with running(first, second):
            health = httpx.get(f"{first.base_url}/healthz", timeout=10)
            assert health.status_code == 200 and health.json() == {"status": "ok"}
            ready = httpx.get(f"{first.base_url}/readyz", timeout=10)
            assert ready.status_code == 200, ready.text
            assert {name for name, check in ready.json()["checks"].items() if check["ok"]} == {
                "database",
                "channel_layer",
                "broker",
            }
            token = token_for(owner)
            headers = {"Authorization": f"Token {token}"}
            for server, count in ((first, 3), (second, 2)):
                for _ in range(count):
                    answer = httpx.get(f"{server.base_url}/api/sessions/{stored.pk}/", headers=headers)
                    assert answer.status_code == 200
            assert httpx.get(f"{second.base_url}/api/sessions/999999/", headers=headers).status_code == 404
            # A compaction (run inside the request here) is timed by the process that ran it.
            long = store(owner, conversation(8))
            compact = httpx.post(
                f"{second.base_url}/api/sessions/{long.pk}/compact/", headers=headers, json={}
            )
            assert compact.status_code == 202, compact.text
            AgentRun.objects.create(session=stored, prompt="waiting", status="queued")
            redis.Redis.from_url(cache.url).lpush("runs", b"{}", b"{}")

            async def scrape_with_a_socket_open() -> str:
                socket = await open_socket(second, stored.pk, token=token)
                try:
                    return httpx.get(f"{first.base_url}/metrics", timeout=10).text
                finally:
                    await socket.close()

            text = async_to_sync(scrape_with_a_socket_open)()

    route = "/api/sessions/<int:pk>/"
    # Requests served by both processes, added up by the one scraped.
    assert _sample(text, "piweb_http_requests_total", route=route, method="GET", status="200") == 5
    assert _sample(text, "piweb_http_requests_total", route=route, method="GET", status="404") == 1
    count = _sample(text, "piweb_http_request_duration_seconds_count", route=route, method="GET")
    assert count == 6
    assert (
        _sample(text, "piweb_http_request_duration_seconds_bucket", route=route, method="GET", le="+Inf") == 6
    )
    assert _sample(text, "piweb_open_sockets") == 1
    assert _sample(text, "piweb_queue_length", queue="runs") == 2
    assert _sample(text, "piweb_queue_length", queue="operations") == 0
    assert _sample(text, "piweb_runs_active", status="queued") == 1
    assert _sample(text, "piweb_compaction_duration_seconds_count", reason="manual", status="succeeded") == 1
    assert _sample(text, "piweb_scrape_failed", part="queues") == 0
    # Paths never become labels: no session id, no token.
    assert f"/api/sessions/{stored.pk}/" not in text and token not in text


def test_metrics_with_a_token_answer_only_the_scraper_that_sends_it(tmp_path: Path) -> None:
    cache = PrivateRedis(tmp_path)
    scrape_token = "scrape-" + "k3y" * 8
    with running(cache):
        env = server_env(cache.url, PIWEB_METRICS="1", PIWEB_METRICS_TOKEN=scrape_token)
        server = AsgiServer(env, tmp_path)
        with running(server):
            url = f"{server.base_url}/metrics"
            refused = [
                httpx.get(url, timeout=10),
                httpx.get(url, headers={"Authorization": "Bearer wrong"}, timeout=10),
                httpx.get(url, headers={"Authorization": f"Bearer {scrape_token}x"}, timeout=10),
                httpx.get(url, headers={"Authorization": f"Token {scrape_token}"}, timeout=10),
            ]
            scraped = httpx.get(url, headers={"Authorization": f"Bearer {scrape_token}"}, timeout=10)
    for answer in refused:
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert "piweb_" not in answer.text
    assert scraped.status_code == 200 and "piweb_http_requests_total" in scraped.text


def test_readyz_names_redis_when_it_stops_answering_and_healthz_stays_up(tmp_path: Path) -> None:
    cache = PrivateRedis(tmp_path)
    with running(cache):
        # No workers here: readiness asks only the services a request needs.
        server = AsgiServer(server_env(cache.url, PIWEB_READY_WORKERS="0"), tmp_path)
        with running(server):
            assert httpx.get(f"{server.base_url}/readyz", timeout=10).status_code == 200
            cache.service.stop()
            started = time.monotonic()
            ready = httpx.get(f"{server.base_url}/readyz", timeout=30)
            elapsed = time.monotonic() - started
            health = httpx.get(f"{server.base_url}/healthz", timeout=10)
            metrics = httpx.get(f"{server.base_url}/metrics", timeout=10)
    assert ready.status_code == 503
    body = ready.json()
    assert body["failed"] == ["channel_layer", "broker"]
    assert "channel_layer, broker" in body["error"]
    assert body["checks"]["database"]["ok"] is True
    assert (
        "6379" not in body["checks"]["broker"]["error"]
        and str(cache.port) in body["checks"]["broker"]["error"]
    )
    assert elapsed < 6  # the probe answers within its own timeout, whatever hangs
    assert health.status_code == 200
    assert metrics.status_code == 404  # off unless PIWEB_METRICS=1


def test_readyz_fails_on_a_read_only_database_and_names_the_release(tmp_path: Path) -> None:
    # A database every new session of which is read-only, as on a replica: SELECT 1 answers, writes fail.
    url = database_url()
    base, _, name = url.rpartition("/")
    readonly = f"{name}_readonly"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{readonly}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{readonly}"')
        admin.execute(f'ALTER DATABASE "{readonly}" SET default_transaction_read_only = on')
    cache = PrivateRedis(tmp_path)
    try:
        with running(cache):
            server = AsgiServer(server_env(cache.url, DATABASE_URL=f"{base}/{readonly}"), tmp_path)
            # The sign-in page needs tables this empty database lacks; the liveness probe needs nothing.
            server.service.healthy = lambda: httpx.get(f"{server.base_url}/healthz", timeout=2).is_success
            with running(server):
                ready = httpx.get(f"{server.base_url}/readyz", timeout=10)
    finally:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{readonly}" WITH (FORCE)')
    assert ready.status_code == 503, ready.text
    body = ready.json()
    assert body["failed"] == ["database"]
    assert "read-only" in body["checks"]["database"]["error"]
    assert body["version"] == piweb.__version__


def test_probes_answer_over_plain_http_where_pages_redirect_to_https(tmp_path: Path) -> None:
    # Production settings (DEBUG off): pages go to HTTPS, the probes an orchestrator sends do not.
    cache = PrivateRedis(tmp_path)
    env = server_env(
        cache.url,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="probe-test-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
    )
    with running(cache):
        server = AsgiServer(env, tmp_path)
        server.service.healthy = lambda: httpx.get(f"{server.base_url}/healthz", timeout=2).is_success
        with running(server):
            page = httpx.get(f"{server.base_url}/accounts/login/", timeout=10)
            ready = httpx.get(f"{server.base_url}/readyz", timeout=10)
    assert page.status_code == 301 and page.headers["location"].startswith("https://")
    assert ready.status_code == 200, ready.text


def test_json_logs_carry_the_request_id_and_no_secret(tmp_path: Path, owner: Any, stored: Any) -> None:
    cache = PrivateRedis(tmp_path)
    secret = "Zq8s3cr3tL1nkT0k3n"
    with running(cache):
        env = server_env(cache.url, PIWEB_LOG_FORMAT="json", DJANGO_LOG_LEVEL="INFO")
        server = AsgiServer(env, tmp_path)
        with running(server):
            mine = httpx.get(f"{server.base_url}/s/{secret}/", headers={"X-Request-ID": "trace-0001-abcd"})
            theirs = httpx.get(f"{server.base_url}/healthz?token={secret}")
            forged = httpx.get(f"{server.base_url}/healthz", headers={"X-Request-ID": "<b>not an id</b>"})
            time.sleep(0.5)
            log = server.log()
    assert mine.status_code == 404 and mine.headers["x-request-id"] == "trace-0001-abcd"
    generated = theirs.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["x-request-id"])
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    access = [r for r in records if r["logger"] == "piweb.access"]
    (link,) = [r for r in access if r["request_id"] == "trace-0001-abcd"]
    assert link["path"] == "/s/[redacted]/" and link["status"] == 404 and link["method"] == "GET"
    # Django's own warning for the missing page carries the same id, redacted as well.
    warnings = [
        r for r in records if r["logger"] == "django.request" and r["request_id"] == "trace-0001-abcd"
    ]
    assert warnings and "[redacted]" in warnings[0]["message"]
    (probe,) = [r for r in access if r["request_id"] == generated]
    assert probe["path"] == "/healthz?token"  # a query's keys, never its values
    assert secret not in log
