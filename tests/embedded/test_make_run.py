"""`make run` as a developer starts it (no DATABASE_URL, no REDIS_URL: SQLite, the embedded channel layer
and a separate local Celery worker): events of background work done by the worker reach the browser.

The checkout is copied to a temporary folder so the run's SQLite database, queue folders and collected
static files never touch the developer's own ``.data/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import connect

from tests.faults.stack import ROOT
from tests.procs import free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(400)]
SKIP = shutil.ignore_patterns(
    ".git", ".venv", ".data", "staticfiles", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache"
)


def copy_checkout(target: Path) -> Path:
    shutil.copytree(ROOT, target, ignore=SKIP, symlinks=True)
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())
    return target


def sign_in(base: str) -> httpx.Client:
    http = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
    page = http.get("/accounts/login/").text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf is not None
    response = http.post(
        "/accounts/login/",
        data={"username": "demo", "password": "demo", "csrfmiddlewaretoken": csrf.group(1), "next": "/"},
        headers={"Referer": base + "/accounts/login/"},
    )
    assert response.status_code == 302, response.text[:500]
    http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
    http.headers["Referer"] = base + "/"
    return http


def test_worker_events_reach_sockets_with_make_runs_configuration(tmp_path: Path) -> None:
    checkout = copy_checkout(tmp_path / "piweb")
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_", "DJANGO_"))
    }
    log_path = tmp_path / "make-run.log"
    with open(log_path, "wb") as log:
        # -o: the shared virtualenv is ready; do not let make reinstall it in the copy.
        server = subprocess.Popen(
            ["make", "-o", ".venv/.installed", "run", f"PORT={port}"],
            cwd=checkout,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            if server.poll() is not None:
                raise AssertionError(log_path.read_text(errors="replace")[-3000:])
            ready = b" ready." in log_path.read_bytes()  # the local worker has started
            return ready and httpx.get(base + "/accounts/login/", timeout=2).status_code == 200

        wait_until(up, 300, "make run to serve pages with its worker ready")
        http = sign_in(base)
        assert http.get("/api/sessions/").json()["results"], "the demo sessions were imported"
        # A session long enough for Pi's compaction to have something to summarize.
        pk = http.post("/api/sessions/", json={"cwd": "/w", "name": "long"}).json()["id"]
        turns = []
        for n in range(6):
            text = f"turn {n}: " + "lorem ipsum dolor sit amet " * 1500
            turns.append({"type": "message", "message": {"role": "user", "content": text, "timestamp": n}})
            reply = {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "api": "openai-completions",
            }
            reply.update(provider="p", model="m", stopReason="stop", timestamp=n)
            reply["usage"] = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}
            turns.append({"type": "message", "message": reply})
        response = http.post(f"/api/sessions/{pk}/append/", json={"entries": turns})
        assert response.status_code == 201, response.text
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())

        async def scenario() -> list[dict[str, Any]]:
            async with connect(
                f"ws://127.0.0.1:{port}/ws/sessions/{pk}/", origin=base, additional_headers={"Cookie": cookie}
            ) as socket:
                state = json.loads(await socket.recv())
                response = http.post(f"/api/sessions/{pk}/compact/", json={})
                assert response.status_code == 202, response.text
                events: list[dict[str, Any]] = []
                # The worker, another process, plans, summarizes and appends; its events come to us.
                async with asyncio.timeout(90):
                    while not (
                        any(e.get("event") == "compaction_end" for e in events)
                        and any(
                            e.get("event") == "entries_appended" and e["seq"] > state["seq"] for e in events
                        )
                    ):
                        events.append(json.loads(await socket.recv()))
                return events

        events = async_to_sync(scenario)()
        names = [e.get("event") for e in events]
        assert "compaction_start" in names and "compaction_end" in names
        end = next(e for e in events if e.get("event") == "compaction_end")
        assert end["result"]["summary"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
