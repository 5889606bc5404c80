"""`make run` on its embedded services: concurrent writers on SQLite, and one Ctrl-C to stop it all.

Both tests start the real `make run` (daphne plus a prefork Celery worker, SQLite, the file broker) on a
temporary data folder, with a loopback model provider answering the runs.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from tests.procs import wait_until

from .makerun import MakeRun, group_members, make_run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

APPEND_THREADS = 4
APPENDS_PER_THREAD = 30
RUNS = 6
IMPORTS = 4
IMPORT_ENTRIES = 3000


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    with ProviderServer() as server:
        yield server


@pytest.fixture
def app(tmp_path: Path, provider: ProviderServer) -> Iterator[MakeRun]:
    with make_run(tmp_path / "data", tmp_path / "make-run.log") as running:
        running.manage(
            "shell",
            "--no-imports",
            "-c",
            "from providers.models import LLMProvider; LLMProvider.objects.create("
            f"name='loopback', api='anthropic-messages', base_url='{provider.url}', model_id='claude-test',"
            " provider='anthropic', api_key='sk-ant-test')",
        )
        yield running


def message(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:06.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def new_session(http: httpx.Client, name: str) -> int:
    created = http.post("/api/sessions/", json={"cwd": "/repo", "name": name})
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def session_file(number: int) -> bytes:
    header = {
        "type": "session",
        "version": 3,
        "id": f"import-{number}",
        "timestamp": "2026-01-02T03:04:05.000Z",
    }
    lines = [{**header, "cwd": "/w"}]
    parent = None
    for i in range(IMPORT_ENTRIES):
        lines.append(message(f"i{number}-{i}", parent, f"imported line {i} " + "y" * 300))
        parent = f"i{number}-{i}"
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def run_status(http: httpx.Client, run_id: str) -> str:
    return str(http.get(f"/api/runs/{run_id}/").json()["status"])


def test_appends_and_runs_at_once_on_sqlite_never_fail(app: MakeRun, provider: ProviderServer) -> None:
    provider.enqueue(*[script.reply(f"answer {i} " + "word " * 40, delay=0.01) for i in range(RUNS)])
    failures: list[str] = []
    appended: dict[int, int] = {}
    counter = itertools.count()

    def appender(session_id: int) -> None:
        parent: str | None = None
        with app.api() as http:
            for _ in range(APPENDS_PER_THREAD):
                batch = []
                for _ in range(5):
                    entry_id = f"e{next(counter)}"
                    batch.append(message(entry_id, parent, "x" * 200))
                    parent = entry_id
                answer = http.post(f"/api/sessions/{session_id}/append/", json={"entries": batch})
                if answer.status_code != 201 and answer.status_code != 200:
                    failures.append(f"append {answer.status_code}: {answer.text[:300]}")
                else:
                    appended[session_id] = appended.get(session_id, 0) + len(batch)
                # Readers too: with a rollback journal a reader holds the writer off.
                listing = http.get(f"/api/sessions/{session_id}/entries/")
                if listing.status_code >= 500:
                    failures.append(f"entries {listing.status_code}: {listing.text[:300]}")

    def importer() -> None:
        # Long write transactions beside the short ones, and whole-file reads of what they wrote.
        with app.api(timeout=120) as http:
            for number in range(IMPORTS):
                answer = http.post(
                    "/api/sessions/import/",
                    content=session_file(number),
                    headers={"Content-Type": "application/x-ndjson"},
                )
                if answer.status_code != 201:
                    failures.append(f"import {answer.status_code}: {answer.text[:300]}")
                    continue
                pk = answer.json()["session"]["id"]
                exported = http.get(f"/api/sessions/{pk}/export/")
                if exported.status_code != 200 or exported.content.count(b"\n") != IMPORT_ENTRIES + 1:
                    failures.append(f"export {exported.status_code}: {exported.text[:300]}")

    with app.api() as http:
        append_sessions = [new_session(http, f"appends {i}") for i in range(APPEND_THREADS)]
        run_sessions = [new_session(http, f"runs {i}") for i in range(RUNS)]
        before = {pk: http.get(f"/api/sessions/{pk}/").json()["entryCount"] for pk in append_sessions}
        threads = [threading.Thread(target=appender, args=(pk,)) for pk in append_sessions]
        threads.append(threading.Thread(target=importer))
        for thread in threads:
            thread.start()
        run_ids = []
        for pk in run_sessions:
            started = http.post(f"/api/sessions/{pk}/runs/", json={"prompt": "Say something long."})
            if started.status_code != 202:
                failures.append(f"run start {started.status_code}: {started.text[:300]}")
            else:
                run_ids.append(started.json()["runId"])
        for thread in threads:
            thread.join(timeout=240)
        wait_until(
            lambda: all(run_status(http, r) in {"succeeded", "failed", "aborted"} for r in run_ids),
            120,
            "every run to end",
        )
        statuses = [http.get(f"/api/runs/{r}/").json() for r in run_ids]
        counts = {
            pk: http.get(f"/api/sessions/{pk}/").json()["entryCount"] - before[pk] for pk in append_sessions
        }

    log = app.log()
    assert failures == [], failures[:5]
    assert "database is locked" not in log
    assert [s["status"] for s in statuses] == ["succeeded"] * RUNS, [s.get("error") for s in statuses]
    assert counts == {pk: APPENDS_PER_THREAD * 5 for pk in append_sessions}
    assert counts == appended


def test_one_ctrl_c_stops_make_run_and_the_interrupted_run_comes_back(
    tmp_path: Path, app: MakeRun, provider: ProviderServer
) -> None:
    # The provider stalls mid-answer, so the worker is busy with the run when Ctrl-C arrives.
    provider.enqueue(script.hang(120, after=2, text="never finished"))
    with app.api() as http:
        session_id = new_session(http, "interrupted")
        started = http.post(f"/api/sessions/{session_id}/runs/", json={"prompt": "Take your time."})
        assert started.status_code == 202, started.text
        run_id = started.json()["runId"]
        wait_until(lambda: len(provider.requests) >= 1, 30, "the worker to call the provider")
        assert run_status(http, run_id) == "running"

    interrupted = time.monotonic()
    app.interrupt()
    wait_until(lambda: not group_members(app.process.pid), 20, "every process of make run to exit")
    stopped_after = time.monotonic() - interrupted
    # A few seconds on a quiet machine; make run's last resort is a SIGKILL after 10 s.
    assert stopped_after < 12, f"make run took {stopped_after:.1f} s to stop"
    assert "Restoring 1 unacknowledged message" in app.log()  # the task went back to the queue

    # The next `make run` on the same data gets the task again and closes the interrupted run, as it
    # would after a crash: one error message in the session, nothing of the half-streamed answer.
    with make_run(app.data_dir, tmp_path / "make-run-2.log") as again, again.api() as http:
        wait_until(lambda: run_status(http, run_id) != "running", 60, "the redelivered run to end")
        detail = http.get(f"/api/runs/{run_id}/").json()
        assert detail["status"] == "failed" and "interrupted" in detail["error"].lower(), detail
        stored = [e["entry"] for e in http.get(f"/api/sessions/{session_id}/entries/").json()["entries"]]
    answers = [e["message"] for e in stored if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert [(a["stopReason"], a["content"]) for a in answers] == [("error", [])]
    assert len(provider.requests) == 1  # nothing was sent to the model twice
