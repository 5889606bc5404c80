"""A webhook endpoint down for an hour: requests are not slowed, and every delivery arrives afterwards.

Time runs 60 times faster than in production: the workers get the default backoff (first retry after
30 s, at most an hour between two, given up after a day) divided by 60, so the hour is a minute. Ten
teammates each have a personal hook for mentions, all pointing at one receiver on loopback that checks
every signature. The session's owner posts comments that mention two of them, through the REST API, at a
steady rate: first for a while with the receiver up (the baseline), then for the "hour" with its port
closed. Halfway through the hour the worker is killed outright and started again, so retries it held
are lost with it and only the sweep finds them. Then the receiver comes back, and the metric waits for
every delivery of the run.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric, ratio_at_most
from bench.metrics.db import require_db
from bench.metrics.procs import REPO_DIR, free_port, wait_until

SCALE = 60.0  # production seconds per bench second
PEOPLE = 10
RATE = 4.0  # comments per second, each mentioning two people: eight deliveries a second
UP_SECONDS = 12.0
OUTAGE_SECONDS = 3600.0 / SCALE
REQUEST_RATIO_LIMIT = 1.5
CATCH_UP_LIMIT_MIN = 60.0  # the longest wait between two attempts, in production minutes


@dataclass
class Receiver:
    """A loopback endpoint that records each delivery's id once its signature checks out."""

    port: int
    secrets: dict[str, str] = field(default_factory=dict)  # the path's person → the hook's secret
    got: Counter[str] = field(default_factory=Counter)  # delivery id → times received
    first_at: dict[str, float] = field(default_factory=dict)  # delivery id → when it first arrived
    unsigned: int = 0
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, person: str) -> str:
        return f"http://127.0.0.1:{self.port}/h/{person}"

    def start(self) -> None:
        from hooks.domain.signing import verify

        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                person = self.path.rsplit("/", 1)[-1]
                ok = verify(
                    receiver.secrets.get(person, ""),
                    self.headers.get("X-Piweb-Timestamp", ""),
                    body,
                    self.headers.get("X-Piweb-Signature", ""),
                    now=time.time(),
                )
                with receiver.lock:
                    if ok:
                        delivery = self.headers.get("X-Piweb-Delivery", "")
                        receiver.got[delivery] += 1
                        receiver.first_at.setdefault(delivery, time.monotonic())
                    else:
                        receiver.unsigned += 1
                self.send_response(204 if ok else 401)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Close the port: the next attempts meet a refused connection."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def _session_file() -> bytes:
    stamp = "2026-01-05T10:00:00.000Z"
    lines = [
        {"type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": stamp, "cwd": "/bench"},
        {
            "type": "message",
            "id": "a0000001",
            "parentId": None,
            "timestamp": stamp,
            "message": {"role": "user", "content": "Please review the parser.", "timestamp": 1767607200000},
        },
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _worker(env: dict[str, str], log: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "piweb.workers", "operations"],
        cwd=REPO_DIR,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,  # killed as a group: the launcher and its Celery processes at once
    )


def _kill(worker: subprocess.Popen[bytes]) -> None:
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()


def _post_for(client: Any, path: str, names: list[str], seconds: float, latencies: list[float]) -> None:
    """Post comments at ``RATE`` per second for ``seconds``, each mentioning the next two people."""
    count = int(seconds * RATE)
    begin = time.monotonic()
    for i in range(count):
        wait = begin + i / RATE - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        body = f"@{names[i % len(names)]} @{names[(i + 1) % len(names)]} the parser change {i}"
        started = time.perf_counter()
        response = client.post(path, {"entryId": "a0000001", "body": body}, format="json")
        latencies.append((time.perf_counter() - started) * 1000)
        if response.status_code != 201:
            raise RuntimeError(f"comment refused: {response.status_code} {response.content[:200]!r}")


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


@metric("hook_outage")
def hook_outage(ctx: Context) -> list[Result]:
    """Comments with mentions before and during a webhook endpoint's hour down; every delivery after."""
    require_db(ctx)
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import override_settings
    from rest_framework.test import APIClient

    from hooks.models import Delivery
    from hooks.services import create_hook
    from piweb.celery import app as celery_app
    from sessions_app.services import import_jsonl, share_with_team
    from teams.models import Team, TeamMembership

    tag = uuid.uuid4().hex[:6]
    owner: Any = bench_user()
    users = get_user_model()
    receiver = Receiver(free_port())
    ops_queue = f"bench-hooks-{tag}"
    env = {
        **os.environ,
        "PIWEB_OPERATIONS_QUEUE": ops_queue,
        "PIWEB_WORKER_CONCURRENCY": "2",
        "PIWEB_LOG_LEVEL": "WARNING",
        "PIWEB_HOOKS_ALLOW_PRIVATE": "1",
        "PIWEB_HOOKS_BACKOFF_FIRST_SECONDS": str(30 / SCALE),
        "PIWEB_HOOKS_BACKOFF_MAX_SECONDS": str(3600 / SCALE),
        "PIWEB_HOOKS_GIVE_UP_SECONDS": str(86400 / SCALE),
        "PIWEB_HOOKS_SWEEP_SECONDS": "1",
        "PIWEB_HOOKS_SWEEP_GRACE_SECONDS": str(60 / SCALE),
        "PIWEB_BEAT_LOCK_SECONDS": "3",
        "PIWEB_BEAT_SCHEDULE": str(ctx.data_dir / f"hooks-beat-{tag}"),
    }
    log_path = ctx.data_dir / "hook_outage_worker.log"
    up: list[float] = []
    down: list[float] = []
    with override_settings(PIWEB_HOOKS_ALLOW_PRIVATE=True, PIWEB_COMMENT_RATE="100000/min"):
        team = Team.objects.create(name=f"bench-hooks-{tag}")
        TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
        names = [f"bench-hook-{tag}-{i}" for i in range(PEOPLE)]
        hooks = []
        for name in names:
            person = users.objects.create(username=name)
            TeamMembership.objects.create(team=team, user=person, role=TeamMembership.Role.VIEWER)
            hook, secret = create_hook(
                actor=person, name="alerts", url=receiver.url(name), events=["mention"]
            )
            receiver.secrets[name] = secret
            hooks.append(hook.pk)
        session = import_jsonl(actor=owner, data=_session_file(), filename="hooks.jsonl").session
        share_with_team(session=session, team=team, access="viewer", actor=owner)
        client = APIClient()
        client.force_authenticate(user=owner)
        path = f"/api/sessions/{session.pk}/comments/"
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_purge("celery")  # tasks earlier metrics queued with no worker
        connections.close_all()
        receiver.start()
        with log_path.open("wb") as log:
            worker = _worker(env, log)
            try:
                wait_until(lambda: b" ready." in log_path.read_bytes(), 60, "the worker", worker, 0.05)
                _post_for(client, path, names, UP_SECONDS, up)
                receiver.stop()
                outage_began = time.monotonic()
                _post_for(client, path, names, OUTAGE_SECONDS / 2, down)
                _kill(worker)
                worker = _worker(env, log)
                _post_for(client, path, names, OUTAGE_SECONDS / 2, down)
                wait_until(lambda: worker.poll() is None, 5, "the worker again")
                remaining = OUTAGE_SECONDS - (time.monotonic() - outage_began)
                if remaining > 0:
                    time.sleep(remaining)
                attempts_down = sum(
                    Delivery.objects.filter(hook_id__in=hooks).values_list("attempts", flat=True)
                )
                receiver.start()
                back = time.monotonic()
                total = len(up + down) * 2

                def all_in() -> bool:
                    return len(receiver.got) >= total

                wait_until(all_in, 3600 / SCALE * 2 + 60, "every delivery", interval=0.2)
                caught_up = time.monotonic() - back
                time.sleep(2)  # an attempt in flight when the last one arrived lands too
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _kill(worker)
                with celery_app.connection_for_write() as broker:
                    broker.default_channel.queue_delete(ops_queue)
                receiver.stop()
    statuses = Counter(Delivery.objects.filter(hook_id__in=hooks).values_list("status", flat=True))
    written = sum(statuses.values())
    delivered = statuses.get(Delivery.Status.DELIVERED, 0)
    lost = total - len(receiver.got)
    twice = sum(1 for n in receiver.got.values() if n > 1)
    up_p95, down_p95 = _p95(up), _p95(down)
    waits = sorted(max(0.0, at - back) * SCALE / 60 for at in receiver.first_at.values())
    half, most = waits[len(waits) // 2], waits[int(len(waits) * 0.9)]
    return [
        ratio_at_most(
            "comment with two mentions while the hooks' endpoint is down, p95",
            down_p95,
            "ms",
            baseline=up_p95,
            limit=REQUEST_RATIO_LIMIT,
            against="the same with the endpoint up",
            note=(
                f"{len(down)} comments over the hour ({OUTAGE_SECONDS:g} s at {SCALE:g}× speed), "
                f"median {statistics.median(down):.1f} ms; endpoint up: {len(up)} comments, median "
                f"{statistics.median(up):.1f} ms; each queues its deliveries after commit and never waits "
                "for them"
            ),
        ),
        at_most(
            "deliveries lost to an hour's outage and a killed worker",
            lost,
            "deliveries",
            0,
            note=(
                f"{total} events for personal hooks; {written} delivery rows, {delivered} delivered, "
                f"statuses {dict(sorted(statuses.items()))}; {len(receiver.got)} distinct ids received with "
                f"a valid signature ({receiver.unsigned} refused as unsigned), {twice} received twice; "
                f"{attempts_down} attempts by the hour's end; the worker was killed outright halfway"
            ),
        ),
        at_most(
            "after the endpoint returns, every delivery in",
            caught_up * SCALE / 60,
            "min",
            CATCH_UP_LIMIT_MIN,
            note=(
                f"{caught_up:.1f} s at {SCALE:g}× speed; half were in after {half:.1f} min, nine in ten "
                f"after {most:.1f} min: each hook's first success sends at once what waited out a backoff"
            ),
        ),
    ]
