"""Kill -9 the web process, the worker or PostgreSQL while writers append: no acknowledged append is lost.

Writers append over the HTTP API with ids they choose, as a sync client does, and remember every append
the server acknowledged. After each crash the killed process is started again and writing goes on. At
the end the private database must hold every acknowledged entry exactly once, in a gapless sequence,
with parents, depths and segments that an in-memory replay of the exported file agrees with.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from providers.llm.testserver import ProviderServer, reply
from tests.procs import wait_until

from .stack import VISIBILITY_TIMEOUT, Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(420)]

ROUNDS = 20
SEED = 20260729
WRITERS = 4


@dataclass(slots=True)
class Ledger:
    """What the writers know: acknowledged ids with their seq, and ids whose fate they never learned."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, int] = field(default_factory=dict)
    recovered: set[str] = field(default_factory=set)  # a retry found them already stored
    unknown: set[str] = field(default_factory=set)
    attempts: int = 0
    failures: int = 0

    def acked_ids(self) -> list[str]:
        with self.lock:
            return list(self.acked)


def message(entry_id: str, text: str, parent: object = ...) -> dict[str, Any]:
    """Return a user message entry; without ``parent`` the server hangs it under the leaf."""
    entry: dict[str, Any] = {
        "type": "message",
        "id": entry_id,
        "message": {"role": "user", "content": text, "timestamp": 1_785_000_000_000},
    }
    if parent is not ...:
        entry["parentId"] = parent
    return entry


def writer(
    stack: Stack, pk: int, name: str, ledger: Ledger, stop: threading.Event, rng: random.Random
) -> None:
    """Append until stopped: mostly at the leaf, sometimes under an older acknowledged entry, in batches."""
    counter = 0
    with stack.client(timeout=5) as http:
        while not stop.is_set():
            size = rng.choice((1, 1, 1, 2, 3))
            ids = [f"{name}-{counter + i}" for i in range(size)]
            counter += size
            known = ledger.acked_ids()
            branch = known and rng.random() < 0.3
            first = message(ids[0], f"{name} says {counter}", rng.choice(known) if branch else ...)
            batch = [first] + [message(i, f"{name} continues") for i in ids[1:]]
            # Retry the same batch until the server answers: a committed batch then reports its ids as taken.
            for _ in range(200):
                with ledger.lock:
                    ledger.attempts += 1
                try:
                    response = http.post(f"/api/sessions/{pk}/append/", json={"entries": batch})
                except httpx.HTTPError:
                    response = None
                if response is not None and response.status_code == 201:
                    with ledger.lock:
                        for row in response.json()["entries"]:
                            ledger.acked[row["id"]] = row["seq"]
                    break
                if response is not None and response.status_code == 400 and "already exists" in response.text:
                    with ledger.lock:
                        ledger.recovered.update(ids)
                    break
                with ledger.lock:
                    ledger.failures += 1
                if stop.wait(0.1):
                    with ledger.lock:
                        ledger.unknown.update(ids)
                    return
            else:
                with ledger.lock:
                    ledger.unknown.update(ids)


def start_agent_run(stack: Stack, pk: int) -> str | None:
    """Start a run; None when the previous one is still held by a worker that was killed."""
    with stack.client() as http:
        response = http.post(f"/api/sessions/{pk}/runs/", json={"prompt": "Tell me a long story."})
    if response.status_code == 409:
        return None
    assert response.status_code in (201, 202), response.text
    return str(response.json()["runId"])


def run_status(stack: Stack, run_id: str) -> str:
    with stack.client() as http:
        return str(http.get(f"/api/runs/{run_id}/").json()["status"])


def test_acknowledged_appends_survive_random_kills(stack: Stack) -> None:
    provider = ProviderServer().start()
    # Every run streams a long reply slowly, so a worker kill lands in the middle of one.
    provider.enqueue(*[reply("Once upon a time " * 40, delay=0.02) for _ in range(200)])
    created = stack.python(
        "from providers.models import LLMProvider;"
        f"LLMProvider.objects.create(name='loopback', api='anthropic-messages', base_url='{provider.url}',"
        "model_id='claude-test', provider='anthropic', api_key='sk-test', is_summarizer_default=True);"
        "print('ok')"
    )
    assert created.strip() == "ok"
    web = stack.start_web()
    worker = stack.start_worker()
    postgres = stack.postgres.service
    with stack.client() as http:
        pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]
        agent_pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]

    rng = random.Random(SEED)
    kinds = ["web"] * 7 + ["worker"] * 7 + ["postgres"] * 6
    rng.shuffle(kinds)
    ledger = Ledger()
    stop = threading.Event()
    threads = [
        threading.Thread(target=writer, args=(stack, pk, f"w{i}", ledger, stop, random.Random(SEED + i)))
        for i in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    runs: list[str] = []
    started = time.monotonic()
    try:
        for kind in kinds:
            if kind == "worker":
                run = start_agent_run(stack, agent_pk)
                if run is not None:
                    runs.append(run)
                    wait_until(lambda: run_status(stack, runs[-1]) != "queued", 30, "the run to start")
            time.sleep(rng.uniform(0.2, 1.5))
            target = {"web": web, "worker": worker, "postgres": postgres}[kind]
            target.crash_and_restart()
            if kind == "postgres":
                # The web process must serve again too, not just the database accept connections.
                wait_until(stack.web_healthy, 30, "the web process after the database came back")
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    elapsed = time.monotonic() - started

    # Runs the killed worker held come back once the visibility window has passed; all must end.
    time.sleep(VISIBILITY_TIMEOUT + 1)
    worker.crash_and_restart()
    worker.recoveries.pop()  # this restart only hands the last held task back; not a measured crash
    worker.kills -= 1
    wait_until(
        lambda: all(run_status(stack, r) in ("succeeded", "failed", "aborted") for r in runs),
        60,
        "every agent run to end",
    )
    provider.stop()

    [report, agent_report] = json.loads(
        stack.manage("shell", "--no-imports", "-c", VERIFY.format(pk, agent_pk))
    )
    stored = report["ids"]
    assert report["problems"] == [], report["problems"]
    assert agent_report["problems"] == [], agent_report["problems"]
    missing = [i for i in ledger.acked if i not in stored]
    assert missing == [], f"acknowledged appends lost: {missing[:20]}"
    assert [i for i in ledger.recovered if i not in stored] == []
    assert all(stored[i] == [seq] for i, seq in ledger.acked.items()), (
        "an acknowledged entry moved or doubled"
    )
    phantoms = set(stored) - set(ledger.acked) - ledger.recovered - ledger.unknown
    assert phantoms == set(), f"entries nobody sent: {[(p, report['types'][p], stored[p]) for p in phantoms]}"

    statuses = Counter(run_status(stack, r) for r in runs)
    kills = {s.name: s.kills for s in (web, worker, postgres)}
    recovery = {
        s.name: f"max {max(s.recoveries):.2f}s, mean {sum(s.recoveries) / len(s.recoveries):.2f}s"
        for s in (web, worker, postgres)
    }
    print(
        f"\n{ROUNDS} rounds in {elapsed:.1f}s: {len(ledger.acked)} entries acknowledged, "
        f"{len(ledger.recovered)} recovered on retry, {len(ledger.unknown)} unknown, "
        f"{ledger.failures} failed attempts of {ledger.attempts}; kills {kills}; recovery {recovery}; "
        f"agent runs {dict(statuses)}; rows {report['rows']} + {agent_report['rows']}"
    )
    assert sum(kills.values()) == ROUNDS
    assert len(ledger.acked) > 200


VERIFY = (
    "import json; from tests.faults.verify import check_session; "
    "print(json.dumps([check_session({0}), check_session({1})]))"
)
