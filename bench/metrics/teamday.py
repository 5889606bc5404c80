"""A team's working day on one machine: readers, syncs, agent runs and open sockets, all at once.

Everything runs on this machine as a deployment would: a private PostgreSQL (``max_connections`` 100, as
Debian's default) and a private Redis, two daphne processes and ``python -m piweb.workers``, all with
production settings. The bench process is the team:

- readers open shared sessions as the page does (the page, then at once its tree, the
  leaf's branch and context, then the comment counts, the leaf's threads and its cost), scroll trees
  (``tree?around=``, a path), comment and search (the API and the list page), 5–15 s between actions;
- syncers follow growing Pi session files with the ``piweb-sync`` client (a few new lines every 2–6 s);
- run slots each keep one agent run going against the loopback provider (``providers.llm.testserver``),
  which answers in 4 s, polling the run's status every 2 s as a script waiting for it would;
- sockets watch the synced sessions (token-authenticated, a ``sync`` every 20 s as ``live.js``).

A socket that stayed open must hear every commit made after it joined: each pushed batch has a
timestamp of its own, so the database says which seq closed each commit. PostgreSQL connections of the
application's database are sampled from ``pg_stat_activity`` every 0.2 s and compared with the budget
of README "Connection budget". Readers also comment on the entries they read, some of their comments
mentioning a teammate (a line in their inbox; the simulated people have no email address).

``PIWEB_BENCH_TEAMDAY_SECONDS`` sets the load's length (default 300; ``--quick`` 30).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import generate
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.procs import REPO_DIR, free_port, wait_for_port, wait_until

SERVER_TIMING = re.compile(r"app;dur=([0-9.]+)")
CONFIG = re.compile(r'<script id="session-config" type="application/json">(.*?)</script>', re.S)
SEARCH_WORDS = ("regression", '"cache invalidation"', "scheduler flush", "parser", "kumquat")
SOCKET_SYNC_S = 20.0  # as static/sessions_app/live.js
GOAL_P95_MS = 200.0
RUN_POLL_S = 2.0  # a script waiting for its run (the page hears it on its socket instead)
EVENT_GRACE_S = 5.0  # after the last commit, before the sockets close


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """How much of each kind of load, and for how long."""

    readers: int = 100
    syncers: int = 10
    runs: int = 20
    sockets: int = 200
    seconds: float = 300.0
    think_s: tuple[float, float] = (5.0, 15.0)
    sync_every_s: tuple[float, float] = (2.0, 6.0)
    provider_s: float = 4.0
    read_sessions: int = 30
    read_entries: int = 1000
    sync_start_entries: int = 200
    web_processes: int = 2


# -- the stack ------------------------------------------------------------------------------------------


def connection_budget(env: Mapping[str, str], *, web: int, runs_workers: int = 1) -> int:
    """Return the most PostgreSQL connections ``web`` web processes and ``runs_workers`` machines' workers
    (``python -m piweb.workers``) may hold, from their configuration (README "Connection budget")."""
    from piweb import config, workers

    pooled = config.database_pool(env)
    if pooled is None:
        raise ValueError("without a pool (PIWEB_DB_POOL_MAX=0) the connections are not bounded")
    operations = config.database_pool(workers.worker_environments(env)[1])
    assert operations is not None
    processes = int(env.get("PIWEB_WORKER_CONCURRENCY", "2")) + 1  # the prefork children and their parent
    return (web + runs_workers) * pooled["max_size"] + runs_workers * processes * operations["max_size"]


class PrivatePostgres:
    """A throwaway PostgreSQL cluster on a free loopback port, with ``max_connections`` as configured."""

    def __init__(self, folder: Path, *, max_connections: int = 100) -> None:
        bins = sorted(
            Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name)
        )
        if not bins:
            raise RuntimeError("PostgreSQL server binaries are not installed")
        self.bin = bins[-1].parent
        self.folder = folder
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        self.max_connections = max_connections
        self.proc: subprocess.Popen[bytes] | None = None

    def _as_user(self) -> dict[str, Any]:
        return {"user": self.user, "group": self.user} if self.user else {}

    def start(self) -> None:
        if self.user:
            shutil.chown(self.folder, self.user, self.user)
        data = self.folder / "data"
        subprocess.run(
            [str(self.bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
            **self._as_user(),
        )
        command = [str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(self.folder)]
        command += ["-c", "listen_addresses=127.0.0.1", "-c", f"max_connections={self.max_connections}"]
        command += ["-c", "fsync=off", "-c", "synchronous_commit=off"]  # a bench, not a store
        log = (self.folder / "postgres.log").open("wb")
        self.proc = subprocess.Popen(command, stdout=log, stderr=log, **self._as_user())
        wait_for_port(self.port, self.proc)
        wait_until(self._ready, 30, "PostgreSQL", interval=0.1)

    def _ready(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url("postgres"), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class PrivateRedis:
    """A redis-server on a free loopback port that keeps nothing on disk."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.folder)]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.proc)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def app_env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    """Return a production-like environment for the app's processes on the given services."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_"))}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "PIWEB_LOG_LEVEL": "WARNING",
        "DJANGO_LOG_LEVEL": "WARNING",
        # The team shares one budget per user for model calls; the runs here are the point, not the limit.
        "PIWEB_LLM_RATE": "100000/min",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


@dataclass(slots=True)
class AppProcesses:
    """The web processes and the workers of one machine, started on one environment."""

    env: dict[str, str]
    log_dir: Path
    web: int = 2
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO_DIR, env=self.env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
            )
        return done.stdout

    def start(self) -> None:
        daphne = str(Path(sys.executable).parent / "daphne")
        for index in range(self.web):
            port = free_port()
            log = (self.log_dir / f"web{index}.log").open("wb")
            self.procs.append(
                subprocess.Popen(
                    [daphne, "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
                    cwd=REPO_DIR,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            self.ports.append(port)
        worker_log = self.log_dir / "workers.log"
        with worker_log.open("wb") as log:
            workers = subprocess.Popen(
                [sys.executable, "-m", "piweb.workers"], cwd=REPO_DIR, env=self.env, stdout=log, stderr=log
            )
        self.procs.append(workers)
        for port, proc in zip(self.ports, self.procs, strict=False):
            wait_for_port(port, proc, timeout=60)
        wait_until(lambda: worker_log.read_bytes().count(b" ready.") >= 2, 90, "the workers", workers)

    @property
    def bases(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, lines: int = 20) -> str:
        parts = []
        for path in sorted(self.log_dir.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)


# -- seeding (runs inside ``manage.py shell`` against the stack's database) ------------------------------


def seed_main(spec_json: str) -> None:
    """Create the team, its shared sessions, run sessions, tokens, cookies and the provider; print JSON."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from providers.models import LLMProvider
    from sessions_app.models import ApiToken
    from sessions_app.services import create_session, import_stream
    from sessions_app.services.sharing import share_with_team
    from teams.services import accept_invitation, create_team, invite_member, pending_invitations

    spec = json.loads(spec_json)
    people = max(spec["readers"], spec["runs"], spec["syncers"], 1)
    users = [get_user_model().objects.create_user(username=f"member{i}", password="-") for i in range(people)]
    lead = users[0]
    team = create_team(actor=lead, name="the team")
    for user in users[1:]:
        invite_member(actor=lead, team_id=team.pk, username=user.username, role="viewer")
        accept_invitation(actor=user, invitation_id=pending_invitations(actor=user)[0].pk)
    shared = []
    for path in spec["files"]:
        with open(path, "rb") as fh:
            session = import_stream(actor=lead, stream=fh, filename=Path(path).name).session
        share_with_team(session=session, team=team, access="viewer", actor=lead)
        shared.append(session.pk)
    runs = [create_session(actor=users[i], cwd="/team", name=f"run slot {i}").pk for i in range(spec["runs"])]
    provider = LLMProvider.objects.create(
        name="team provider",
        api="anthropic-messages",
        base_url=spec["provider_url"],
        model_id="claude-team",
        provider="anthropic",
        api_key="sk-team",
    )
    members = []
    for user in users:
        client = Client()
        client.force_login(user)
        token = ApiToken.objects.create(user=user, name="team day")[1]
        members.append(
            {
                "username": user.username,
                "token": token,
                "cookie": f"sessionid={client.cookies['sessionid'].value}",
            }
        )
    print(json.dumps({"members": members, "shared": shared, "runs": runs, "provider": provider.pk}))


def wait_for_backlog(database_url: str, redis_url: str, timeout: float = 300.0) -> float:
    """Wait until the workers have done what seeding queued (the secret scans of the imported sessions,
    tens of thousands of entries); return the seconds it took. A team's day starts on a server that has
    caught up: otherwise the first minute measures the seeding's tail, not the team."""
    import psycopg
    import redis

    from piweb.workers import ALL_QUEUES

    started = time.monotonic()
    broker = redis.Redis.from_url(redis_url)
    try:
        with psycopg.connect(database_url, autocommit=True) as conn:
            while time.monotonic() - started < timeout:
                (scans,) = conn.execute("SELECT count(*) FROM governance_pendingscan").fetchone() or (0,)
                queued = sum(int(broker.llen(queue)) for queue in ALL_QUEUES)  # type: ignore[arg-type]
                if scans == 0 and queued == 0:
                    return time.monotonic() - started
                time.sleep(0.5)
    finally:
        broker.close()
    raise RuntimeError(f"the workers did not catch up with the seeding in {timeout:.0f} s")


def seed(app: AppProcesses, plan: Plan, files: list[Path], provider_url: str) -> dict[str, Any]:
    spec = {
        "readers": plan.readers,
        "runs": plan.runs,
        "syncers": plan.syncers,
        "files": [str(p) for p in files],
        "provider_url": provider_url,
    }
    code = f"from bench.metrics.teamday import seed_main; seed_main({json.dumps(json.dumps(spec))})"
    out = app.manage("shell", "--no-imports", "-c", code)
    return dict(json.loads(out.strip().splitlines()[-1]))


# -- the load -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """Latencies per kind of request, errors, and what the sockets heard."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    comments: int = 0
    runs_started: int = 0
    runs_done: int = 0
    run_statuses: dict[str, int] = field(default_factory=dict)
    run_seconds: list[float] = field(default_factory=list)
    sockets_dropped: int = 0
    sockets_failed: int = 0
    not_modified: int = 0  # GETs answered 304 to a reader's kept copy
    missed_events: int = 0
    expected_events: int = 0
    peak_connections: int = 0
    connection_samples: list[int] = field(default_factory=list)
    # (seconds since the load began, ms) of each page and API request: whether the tail is steady or grows
    timeline: list[tuple[float, float, str]] = field(default_factory=list)  # sent at, ms, kind
    started: float = field(default_factory=time.perf_counter)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per group of processes, during the load
    first_cpu: dict[str, float] = field(default_factory=dict)  # the same in the load's first 10 s
    # (seconds since the load began, ms late) of the team's own event loop: when it is late, every timer it
    # runs reads long whatever the servers did, so the first minute's note says how late it was
    loop_lag: list[tuple[float, float]] = field(default_factory=list)
    # (seconds since the load began, ms) the application itself took, from its Server-Timing header
    server_timeline: list[tuple[float, float]] = field(default_factory=list)
    load_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def served(self, response: Any, ms: float) -> None:
        """Note the application's own time for a request that took ``ms`` as the team saw it."""
        found = SERVER_TIMING.search(response.headers.get("server-timing", ""))
        if found:
            with self.lock:
                self.server_timeline.append((time.perf_counter() - self.started - ms / 1000, float(found[1])))

    def record(self, kind: str, ms: float, ok: bool, detail: str = "") -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(ms)
            if kind.startswith(("page", "api")):
                self.timeline.append((time.perf_counter() - self.started - ms / 1000, ms, kind))
            if not ok:
                self.errors[kind] = self.errors.get(kind, 0) + 1
                if len(self.examples) < 10:
                    self.examples.append(f"{kind}: {detail}")

    def summary(self) -> dict[str, Any]:
        """Return the numbers as JSON-able values (percentiles instead of every sample)."""
        kinds = {
            kind: dict(zip(("p50", "p95", "p99"), percentiles(v), strict=True))
            for kind, v in self.latencies.items()
        }
        return {
            "kinds": kinds,
            "counts": {kind: len(v) for kind, v in self.latencies.items()},
            "errors": self.errors,
            "examples": self.examples,
            "comments": self.comments,
            "runs": {"started": self.runs_started, "done": self.runs_done, "statuses": self.run_statuses},
            "sockets": {"dropped": self.sockets_dropped, "failed": self.sockets_failed},
            "events": {"expected": self.expected_events, "missed": self.missed_events},
            "peak_connections": self.peak_connections,
            "not_modified": self.not_modified,
            "p95_by_minute": self.p95_by_minute(),
            "cpu_seconds": self.cpu,
            "load_seconds": self.load_seconds,
        }

    def p95_by_minute(self) -> list[float]:
        """Return the page and API p95 of each minute of the load, by when the request was sent."""
        minutes: dict[int, list[float]] = {}
        for at, ms, _ in self.timeline:
            minutes.setdefault(max(0, int(at // 60)), []).append(ms)
        return [round(percentiles(minutes[m])[1]) for m in sorted(minutes)]

    def first_minute(self) -> str:
        """Return the first minute's p95 by 10 s (and how many requests), and its slowest kinds."""
        spans = _first_minute_by_ten_seconds((at, ms) for at, ms, _ in self.timeline)
        kinds: dict[str, list[float]] = {}
        for at, ms, kind in self.timeline:
            if at < 60:
                kinds.setdefault(kind, []).append(ms)
        by_span = ", ".join(
            f"{10 * span}-{10 * span + 10} s: {round(percentiles(v)[1])} ({len(v)})"
            for span, v in sorted(spans.items())
        )
        slowest = sorted(kinds.items(), key=lambda item: -percentiles(item[1])[1])[:4]
        worst = ", ".join(f"{k} {round(percentiles(v)[1])}" for k, v in slowest)
        lags = _first_minute_by_ten_seconds(self.loop_lag)
        lag = ", ".join(f"{round(max(v))}" for _, v in sorted(lags.items()))
        served = _first_minute_by_ten_seconds(self.server_timeline)
        inside = ", ".join(f"{round(percentiles(v)[1])}" for _, v in sorted(served.items()))
        return (
            f"first minute p95 (requests) by 10 s: {by_span}; the same in the application (Server-Timing): "
            f"{inside or '-'}; its slowest kinds (p95 ms): {worst}; "
            f"the team's own event loop late by at most (ms, by 10 s): {lag or '-'}"
        )

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def _first_minute_by_ten_seconds(samples: Iterable[tuple[float, float]]) -> dict[int, list[float]]:
    """Group (seconds since the load began, value) samples of the first minute by their 10 s span."""
    spans: dict[int, list[float]] = {}
    for at, value in samples:
        if at < 60:
            spans.setdefault(max(0, int(at // 10)), []).append(value)
    return spans


def percentiles(values: list[float]) -> tuple[float, float, float]:
    """Return p50, p95 and p99 of values."""
    if len(values) < 2:
        one = values[0] if values else 0.0
        return one, one, one
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[94], cuts[98]


class Team:
    """Drive the plan against the stack's web processes until ``seconds`` have passed."""

    def __init__(
        self,
        plan: Plan,
        bases: list[str],
        seeded: dict[str, Any],
        provider: Any,
        tmp: Path,
        cpu_roots: Mapping[str, list[int]] | None = None,
    ) -> None:
        self.plan = plan
        self.cpu_roots = dict(cpu_roots or {})
        self.bases = bases
        self.members = seeded["members"]
        self.shared = seeded["shared"]
        self.run_sessions = seeded["runs"]
        self.provider_id = seeded["provider"]
        self.provider = provider
        self.tmp = tmp
        self.tally = Tally()
        self.stop = asyncio.Event()
        self.sockets_stop = asyncio.Event()  # later: the sockets hear the last commits first
        self.synced: dict[int, int] = {}  # syncer index -> session pk, once its first push is stored
        self.synced_ready = asyncio.Event()
        self.socket_heard: list[tuple[int, int, set[int], bool]] = []  # pk, first seq, heard, stayed open

    # -- HTTP ------------------------------------------------------------------------------------------

    async def _get(
        self,
        http: Any,
        kind: str,
        url: str,
        member: dict[str, str],
        copies: dict[str, tuple[str, Any]] | None = None,
        **params: Any,
    ) -> Any:
        """GET as a browser does: with ``copies`` (one reader's HTTP cache), a kept answer's ETag is sent
        and a 304 answers with the kept copy."""
        page = not url.startswith("/api/")
        headers = {"Cookie": member["cookie"]} if page else {"Authorization": f"Token {member['token']}"}
        address = f"{url}?{sorted(params.items())}"
        kept = copies.get(address) if copies is not None else None
        if kept is not None:
            headers["If-None-Match"] = kept[0]
        t0 = time.perf_counter()
        try:
            response = await http.get(url, params=params or None, headers=headers)
            ok = response.status_code == 200 or (response.status_code == 304 and kept is not None)
            detail = f"{response.status_code} {url}"
        except Exception as exc:  # a refused or timed-out request is an error like a 500
            response, ok, detail = None, False, f"{type(exc).__name__} {url}"
        ms = (time.perf_counter() - t0) * 1000
        self.tally.record(kind, ms, ok, detail)
        if response is not None:
            self.tally.served(response, ms)
        if not ok or response is None:
            return None
        if response.status_code == 304 and kept is not None:
            self.tally.not_modified += 1
            return kept[1]
        body = response.text if page else response.json()
        etag = response.headers.get("ETag")
        if copies is not None and etag:
            copies[address] = (etag, body)
        return body

    async def _post(self, http: Any, kind: str, url: str, member: dict[str, str], body: Any) -> Any:
        headers = {"Authorization": f"Token {member['token']}"}
        t0 = time.perf_counter()
        try:
            response = await http.post(url, json=body, headers=headers)
            ok = response.status_code in (200, 201)
            detail = f"{response.status_code} {url} {response.text[:200]}"
        except Exception as exc:
            response, ok, detail = None, False, f"{type(exc).__name__} {url}"
        ms = (time.perf_counter() - t0) * 1000
        self.tally.record(kind, ms, ok, detail)
        if response is not None:
            self.tally.served(response, ms)
        return response.json() if ok and response is not None else None

    async def open_session(
        self, http: Any, member: dict[str, str], pk: int, copies: dict[str, tuple[str, Any]]
    ) -> list[str]:
        """Open a session as its page does: the page (which names the leaf), then its first screen's
        requests at once (the tree, the leaf's branch and context), then what follows them (comment
        counts, the leaf's threads, its cost). Like a browser, the reader keeps answers that carry an
        ETag (``copies``) and asks with it the next time."""
        base = f"/api/sessions/{pk}"
        html = await self._get(http, "page: session", f"/sessions/{pk}/", member)
        found = CONFIG.search(html or "")
        leaf = json.loads(found.group(1)).get("leafId") if found else None  # the page comes with its leaf
        if not leaf:
            return []
        _, path, _ = await asyncio.gather(
            self._get(http, "api: tree", f"{base}/tree/", member, copies),
            self._get(http, "api: path", f"{base}/path/", member, copies, leaf=leaf, limit=12, render=1),
            self._get(
                http,
                "api: context",
                f"{base}/context/",
                member,
                copies,
                leaf=leaf,
                head=10,
                tail=40,
                llm="false",
                render=20,
            ),
        )
        ids = [row["id"] for row in (path or {}).get("entries", []) if row.get("id")]
        await asyncio.gather(
            self._get(
                http, "api: comments", f"{base}/comments/", member, entries=",".join(ids[-40:]) or leaf
            ),
            self._get(http, "api: comments", f"{base}/comments/", member, entryId=leaf),
            self._get(
                http,
                "api: cost",
                f"{base}/cost/",
                member,
                copies,
                at=leaf,
                entries=",".join(ids[-3:]) or leaf,
            ),
        )
        return ids

    async def reader(self, index: int, http: Any) -> None:
        member = self.members[index % len(self.members)]
        rng = random.Random(index)
        await asyncio.sleep(rng.uniform(0, self.plan.think_s[1]))
        ids: list[str] = []
        copies: dict[str, tuple[str, Any]] = {}  # this reader's browser cache
        pk = rng.choice(self.shared)
        while not self.stop.is_set():
            action = rng.random()
            if action < 0.3 or not ids:
                pk = rng.choice(self.shared)
                ids = await self.open_session(http, member, pk, copies)
            elif action < 0.6:
                around = rng.choice(ids)
                tree = f"/api/sessions/{pk}/tree/"
                await self._get(http, "api: tree", tree, member, copies, around=around)
                path = f"/api/sessions/{pk}/path/"
                await self._get(http, "api: path", path, member, copies, leaf=around, limit=12, render=1)
            elif action < 0.75:
                # A comment on an entry of the branch, now and then naming a teammate (who can read it).
                entry = rng.choice(ids)
                await self._get(http, "api: comments", f"/api/sessions/{pk}/comments/", member, entryId=entry)
                mention = self.members[rng.randrange(len(self.members))]["username"]
                text = f"@{mention} is this the regression?" if rng.random() < 0.3 else "Looks right to me."
                posted = await self._post(
                    http,
                    "api: comment",
                    f"/api/sessions/{pk}/comments/",
                    member,
                    {"entryId": entry, "body": text},
                )
                if posted is not None:
                    self.tally.comments += 1
            elif action < 0.95:
                await self._get(http, "api: search", "/api/search/", member, q=rng.choice(SEARCH_WORDS))
            else:
                await self._get(http, "page: list", "/", member, q=rng.choice(SEARCH_WORDS))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), rng.uniform(*self.plan.think_s))

    # -- runs ------------------------------------------------------------------------------------------

    async def run_slot(self, slot: int, http: Any) -> None:
        from providers.llm.testserver import hang

        member = self.members[slot % len(self.members)]
        headers = {"Authorization": f"Token {member['token']}"}
        pk = self.run_sessions[slot]
        await asyncio.sleep(slot * 0.05)
        while not self.stop.is_set():
            self.provider.enqueue(hang(self.plan.provider_s, after=1, text="Done."))
            t0 = time.perf_counter()
            try:
                response = await http.post(
                    f"/api/sessions/{pk}/runs/",
                    json={"prompt": "go", "providerId": self.provider_id},
                    headers=headers,
                )
                ok, detail = response.status_code == 202, f"{response.status_code} {response.text[:200]}"
            except Exception as exc:
                response, ok, detail = None, False, type(exc).__name__
            self.tally.record("api: run start", (time.perf_counter() - t0) * 1000, ok, detail)
            if not ok or response is None:
                await asyncio.sleep(1)
                continue
            self.tally.runs_started += 1
            run_id = response.json()["runId"]
            status = await self._follow_run(http, member, run_id, t0)
            self.tally.run_statuses[status] = self.tally.run_statuses.get(status, 0) + 1
            if status == "succeeded":
                self.tally.runs_done += 1

    async def _follow_run(self, http: Any, member: dict[str, str], run_id: str, t0: float) -> str:
        # In-flight runs are followed past the end of the load: every run must finish.
        deadline = time.perf_counter() + self.plan.provider_s + 60
        while time.perf_counter() < deadline:
            await asyncio.sleep(RUN_POLL_S)
            body = await self._get(http, "api: run status", f"/api/runs/{run_id}/", member)
            if body is not None and body.get("finishedAt"):
                self.tally.run_seconds.append(time.perf_counter() - t0)
                return str(body["status"])
        return "unfinished"

    # -- syncs -----------------------------------------------------------------------------------------

    def syncer(self, index: int, base: str, stop: threading.Event) -> None:
        """Grow one Pi session file and push it with the piweb-sync client (a thread of its own)."""
        import httpx
        from piweb_sync.push import Pusher
        from piweb_sync.state import StateStore

        member = self.members[index % len(self.members)]
        folder = self.tmp / f"sync{index}"
        folder.mkdir()
        source = generate.ensure_session(
            generate.SessionSpec(
                entries=self.plan.sync_start_entries, seed=generate.DEFAULT_SEED + 900 + index
            ),
            self.tmp / "files",
        )
        path = folder / f"session-{index}.jsonl"
        shutil.copyfile(source.path, path)
        parent = str(source.meta["leaf_id"])
        rng = random.Random(1000 + index)

        def remember(response: httpx.Response) -> None:
            if response.request.url.path.endswith("/api/sync/") and response.status_code == 200:
                response.read()
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    self.synced[index] = int(response.json()["sessionId"])

        with httpx.Client(
            base_url=base,
            headers={"Authorization": f"Token {member['token']}"},
            timeout=30,
            event_hooks={"response": [remember]},
        ) as http:
            pusher = Pusher(http=http, store=StateStore.load(folder / "state.json", base), root=folder)
            batch = 0
            while True:
                t0 = time.perf_counter()
                try:
                    reports = pusher.push_once()
                    bad = [r for r in reports if r.status != "synced"]
                    ok, detail = not bad, "; ".join(f"{r.status} {r.reason}" for r in bad)
                except Exception as exc:
                    ok, detail = False, repr(exc)
                self.tally.record("sync: push", (time.perf_counter() - t0) * 1000, ok, detail)
                if stop.wait(rng.uniform(*self.plan.sync_every_s)):
                    return
                batch += 1
                parent = self._grow(path, parent, index, batch, rng.randint(1, 5))

    @staticmethod
    def _grow(path: Path, parent: str, index: int, batch: int, count: int) -> str:
        """Append count message lines; every line of a batch carries the batch's own timestamp."""
        stamp = f"2026-12-01T{batch // 3600 % 24:02d}:{batch // 60 % 60:02d}:{batch % 60:02d}.{index:03d}Z"
        lines = []
        for n in range(count):
            entry_id = secrets.token_hex(4)
            role = "user" if n % 2 == 0 else "assistant"
            text = f"batch {batch} line {n}: the scheduler flush needs a regression test"
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            message = {"role": role, "content": content, "timestamp": int(time.time() * 1000)}
            entry = {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": stamp,
                "message": message,
            }
            lines.append(orjson.dumps(entry) + b"\n")
            parent = entry_id
        with path.open("ab") as fh:
            fh.write(b"".join(lines))  # one write: the client never reads half a batch
        return parent

    # -- sockets ---------------------------------------------------------------------------------------

    async def socket(self, index: int) -> None:
        from websockets.asyncio.client import connect

        await self.synced_ready.wait()
        await asyncio.sleep(index * 0.02)  # pages open over a few seconds, not in one instant
        syncer = index % self.plan.syncers
        pk = self.synced[syncer]
        member = self.members[syncer % len(self.members)]
        base = self.bases[index % len(self.bases)]
        t0 = time.perf_counter()
        try:
            socket = await connect(
                base.replace("http", "ws", 1) + f"/ws/sessions/{pk}/",
                additional_headers={"Authorization": f"Token {member['token']}"},
                open_timeout=10,
                ping_interval=None,
            )
            first = json.loads(await asyncio.wait_for(socket.recv(), 10))
        except Exception as exc:
            self.tally.sockets_failed += 1
            self.tally.record("socket: accept", (time.perf_counter() - t0) * 1000, False, repr(exc))
            return
        self.tally.record("socket: accept", (time.perf_counter() - t0) * 1000, True)
        heard: set[int] = set()
        held = int(first.get("seq") or 0)
        stayed = True

        async def sync_now_and_then() -> None:
            with contextlib.suppress(Exception):
                await asyncio.sleep(random.uniform(0, SOCKET_SYNC_S))
                while True:
                    await socket.send(json.dumps({"type": "sync", "seq": held}))
                    await asyncio.sleep(SOCKET_SYNC_S)

        syncing = asyncio.create_task(sync_now_and_then())
        stopping = asyncio.create_task(self.sockets_stop.wait())
        try:
            while True:
                receiving = asyncio.create_task(socket.recv())
                done, _ = await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if receiving not in done:
                    receiving.cancel()
                    break
                try:
                    message = json.loads(receiving.result())
                except Exception:
                    stayed = False
                    break
                seq = message.get("seq")
                if message.get("type") == "event" and isinstance(seq, int):
                    heard.add(seq)
                    held = max(held, seq)
        finally:
            syncing.cancel()
            stopping.cancel()
            with contextlib.suppress(Exception):
                await socket.close()
        if not stayed:
            self.tally.sockets_dropped += 1
        self.socket_heard.append((pk, int(first.get("seq") or -1), heard, stayed))

    # -- connections -----------------------------------------------------------------------------------

    def sample_connections(self, admin_url: str, database: str, stop: threading.Event) -> None:
        import psycopg

        with psycopg.connect(admin_url, autocommit=True) as conn:
            while not stop.is_set():
                (count,) = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = %s AND backend_type = 'client backend'",
                    [database],
                ).fetchone() or (0,)
                self.tally.connection_samples.append(int(count))
                self.tally.peak_connections = max(self.tally.peak_connections, int(count))
                stop.wait(0.2)

    async def watch_loop(self) -> None:
        """Sample how late the team's event loop wakes (its lag delays every request it times)."""
        tick = 0.05
        while not self.stop.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(tick)
            late = (time.perf_counter() - t0 - tick) * 1000
            with self.tally.lock:
                self.tally.loop_lag.append((t0 - self.tally.started, max(0.0, late)))

    # -- all together ----------------------------------------------------------------------------------

    async def drive(self, admin_url: str, database: str) -> Tally:
        import logging

        import httpx

        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown the table

        load_stop, sampler_stop = threading.Event(), threading.Event()
        sampler = threading.Thread(target=self.sample_connections, args=(admin_url, database, sampler_stop))
        sampler.start()
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=200)
        clients = [httpx.AsyncClient(base_url=b, timeout=30, limits=limits) for b in self.bases]
        syncers = [
            threading.Thread(
                target=self.syncer, args=(i, self.bases[i % len(self.bases)], load_stop), daemon=True
            )
            for i in range(self.plan.syncers)
        ]
        try:
            for thread in syncers:
                thread.start()
            # Sockets watch the synced sessions: they open once every syncer's first push is stored.
            deadline = time.monotonic() + 60
            while len(self.synced) < self.plan.syncers and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if len(self.synced) < self.plan.syncers:
                raise RuntimeError(
                    f"only {len(self.synced)} of {self.plan.syncers} syncers stored their session"
                )
            self.synced_ready.set()
            self.tally.started = time.perf_counter()
            cpu_before = cpu_seconds(self.cpu_roots)
            sockets = [asyncio.create_task(self.socket(i)) for i in range(self.plan.sockets)]
            tasks = [asyncio.create_task(self.watch_loop())]
            tasks += [
                asyncio.create_task(self.reader(i, clients[i % len(clients)]))
                for i in range(self.plan.readers)
            ]
            tasks += [
                asyncio.create_task(self.run_slot(s, clients[s % len(clients)]))
                for s in range(self.plan.runs)
            ]
            await asyncio.sleep(min(10.0, self.plan.seconds))
            first = cpu_seconds(self.cpu_roots)
            self.tally.first_cpu = {g: first[g] - cpu_before.get(g, 0.0) for g in first}
            await asyncio.sleep(max(0.0, self.plan.seconds - 10.0))
            cpu_after = cpu_seconds(self.cpu_roots)
            self.tally.load_seconds = time.perf_counter() - self.tally.started
            self.tally.cpu = {g: cpu_after[g] - cpu_before.get(g, 0.0) for g in cpu_after}
            self.stop.set()
            load_stop.set()
            for thread in syncers:
                await asyncio.to_thread(thread.join, 60)
            await asyncio.gather(*tasks)  # the runs in flight finish
            await asyncio.sleep(EVENT_GRACE_S)  # the last commits' events are still on their way
            self.sockets_stop.set()
            await asyncio.gather(*sockets)
        finally:
            self.stop.set()
            self.sockets_stop.set()
            load_stop.set()
            sampler_stop.set()
            for client in clients:
                await client.aclose()
            sampler.join(10)
        return self.tally

    def count_missed(self, database_url: str) -> None:
        """Compare what each socket that stayed open heard with the commits made after it joined."""
        import psycopg

        pks = sorted({pk for pk, _, _, _ in self.socket_heard})
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT session_id, max(seq) FROM sessions_app_entry WHERE session_id = ANY(%s) "
                "GROUP BY session_id, timestamp",
                [pks],
            ).fetchall()
        commits: dict[int, set[int]] = {}
        for pk, last in rows:
            commits.setdefault(pk, set()).add(int(last))
        for pk, first, heard, stayed in self.socket_heard:
            if not stayed:
                continue
            expected = {seq for seq in commits.get(pk, set()) if seq > first}
            self.tally.expected_events += len(expected)
            missed = expected - heard
            self.tally.missed_events += len(missed)
            if missed and len(self.tally.examples) < 20:
                self.tally.examples.append(f"socket on {pk} from seq {first} missed {sorted(missed)[:5]}")


# -- CPU ------------------------------------------------------------------------------------------------


def _proc_stats() -> dict[int, tuple[int, float]]:
    """Return {pid: (parent pid, CPU seconds of it and of its reaped children)} from /proc."""
    hz = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        # fields[1] is the parent; utime, stime, cutime, cstime are fields 14-17 of the line
        stats[int(name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / hz)
    return stats


def cpu_seconds(roots: Mapping[str, list[int]]) -> dict[str, float]:
    """Return the CPU seconds used so far by each group of process trees (a root and its descendants,
    less the trees of the other groups' roots)."""
    if not Path("/proc/self/stat").exists():
        return {}
    stats = _proc_stats()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    rooted = {pid for pids in roots.values() for pid in pids}
    used: dict[str, float] = {}
    for group, pids in roots.items():
        todo, total = list(pids), 0.0
        while todo:
            pid = todo.pop()
            if pid in stats:
                total += stats[pid][1]
                # A group's own process tree may hold another group's root (the bench starts them all).
                todo.extend(c for c in children.get(pid, []) if c not in rooted)
        used[group] = total
    return used


# -- the whole scenario ---------------------------------------------------------------------------------


@contextlib.contextmanager
def stack(folder: Path, *, web: int, extra_env: Mapping[str, str] | None = None) -> Iterator[tuple[Any, ...]]:
    """Start PostgreSQL, Redis, the web processes and the workers; yield (postgres, app, database, redis)."""
    folder.mkdir(parents=True, exist_ok=True)
    # A folder of its own: as root the server runs as ``postgres``, which must own it.
    postgres = PrivatePostgres(Path(tempfile.mkdtemp(prefix="piweb-teamday-pg-")))
    redis = PrivateRedis(folder)
    app: AppProcesses | None = None
    try:
        postgres.start()
        redis.start()
        postgres.create_database("piweb")
        (folder / "logs").mkdir()
        app = AppProcesses(
            app_env(postgres.url("piweb"), redis.url, **(extra_env or {})), folder / "logs", web
        )
        started = time.monotonic()
        app.manage("migrate", "--noinput", "-v0")
        app.manage("collectstatic", "--noinput", "-v0")  # production pages need the hashed files
        print(f"bench: team day database migrated in {time.monotonic() - started:.0f} s", file=sys.stderr)
        yield postgres, app, "piweb", redis
    finally:
        if app is not None:
            app.stop()
        redis.stop()
        postgres.stop()
        shutil.rmtree(postgres.folder, ignore_errors=True)


def run_team_day(
    plan: Plan, folder: Path, files: list[Path], *, extra_env: Mapping[str, str] | None = None
) -> tuple[Tally, int, str]:
    """Run the whole scenario in ``folder``; return (the tally, the connection budget, the logs' tails)."""
    from piweb import config
    from providers.llm.testserver import ProviderServer

    with (
        stack(folder, web=plan.web_processes, extra_env=extra_env) as (postgres, app, database, redis),
        ProviderServer() as provider,
    ):
        started = time.monotonic()
        seeded = seed(app, plan, files, provider.url)
        app.start()
        drained = wait_for_backlog(postgres.url(database), redis.url)
        print(
            f"bench: team day stack ready, seeded in {time.monotonic() - started:.0f} s "
            f"(the workers' backlog took {drained:.0f} s)",
            file=sys.stderr,
        )
        # Without a pool (PIWEB_DB_POOL_MAX=0, the former setup) nothing bounds the connections: 0.
        budget = connection_budget(app.env, web=plan.web_processes) if config.database_pool(app.env) else 0
        assert postgres.proc is not None and redis.proc is not None
        roots = {
            "web": [p.pid for p in app.procs[: plan.web_processes]],
            "workers": [p.pid for p in app.procs[plan.web_processes :]],
            "postgres": [postgres.proc.pid],
            "redis": [redis.proc.pid],
            "bench": [os.getpid()],  # the simulated team, the syncers and the provider
        }
        team = Team(plan, app.bases, seeded, provider, folder, cpu_roots=roots)
        tally = asyncio.run(team.drive(postgres.url("postgres"), database))
        team.count_missed(postgres.url(database))
        return tally, budget, app.log_tail()


def _kinds_note(tally: Tally) -> str:
    parts = []
    for kind in sorted(tally.latencies):
        p50, p95, p99 = percentiles(tally.latencies[kind])
        errors = tally.errors.get(kind, 0)
        parts.append(
            f"{kind}: n={len(tally.latencies[kind])} p50 {p50:.0f} / p95 {p95:.0f} / p99 {p99:.0f} ms"
            + (f", {errors} errors" if errors else "")
        )
    return "; ".join(parts)


def _cpu_note(tally: Tally) -> str:
    if not tally.cpu or tally.load_seconds <= 0:
        return "CPU not measured"
    cores = os.cpu_count() or 1
    shares = ", ".join(
        f"{group} {100 * used / tally.load_seconds:.0f}%" for group, used in sorted(tally.cpu.items())
    )
    busy = sum(tally.cpu.values()) / tally.load_seconds
    first = ", ".join(f"{group} {10 * used:.0f}%" for group, used in sorted(tally.first_cpu.items()))
    return (
        f"CPU during the load (% of one core): {shares}; {busy:.2f} of {cores} cores busy; "
        f"in its first 10 s: {first or '-'}"
    )


def results(plan: Plan, tally: Tally, budget: int) -> list[Result]:
    """Return the bench rows of one team day."""
    http = [
        ms for kind, values in tally.latencies.items() if kind.startswith(("page", "api")) for ms in values
    ]
    _, p95, p99 = percentiles(http)
    load = os.getloadavg()[0]
    shape = (
        f"{plan.readers} readers, {plan.syncers} syncers, {plan.runs} run slots "
        f"({plan.provider_s:g} s provider), {plan.sockets} sockets, {plan.seconds:.0f} s, "
        f"{plan.web_processes} daphne + python -m piweb.workers"
    )
    runs_note = (
        f"{tally.runs_started} runs started, {tally.runs_done} succeeded, statuses {tally.run_statuses}; "
        + (
            "run request → end p50 {:.1f} s, p95 {:.1f} s".format(*percentiles(tally.run_seconds)[:2])
            if tally.run_seconds
            else ""
        )
    )
    accept = percentiles(tally.latencies.get("socket: accept", []))
    rows = [
        at_most(
            f"team day: page and API p95 ({shape})",
            p95,
            "ms",
            GOAL_P95_MS,
            note=(
                f"p99 {p99:.0f} ms over {len(http)} requests ({tally.not_modified} answered 304 to a "
                f"reader's kept copy, as a browser revalidates); p95 by minute {tally.p95_by_minute()} ms; "
                f"{tally.first_minute()}; "
                f"{_kinds_note(tally)}; {_cpu_note(tally)}; load average {load:.1f}"
            ),
        ),
        Result(
            metric="team day: errors, missed events, unfinished runs",
            value=float(tally.error_count + tally.missed_events + (tally.runs_started - tally.runs_done)),
            unit="count",
            goal="0",
            met=tally.error_count == 0 and tally.missed_events == 0 and tally.runs_started == tally.runs_done,
            note=(
                f"{tally.error_count} errors {dict(tally.errors)} (e.g. {tally.examples[:3]}); "
                f"{tally.missed_events} of {tally.expected_events} events missed by sockets that stayed open "
                f"({tally.sockets_dropped} dropped, {tally.sockets_failed} not accepted; accept p50 "
                f"{accept[0]:.0f} / p95 {accept[1]:.0f} ms); {runs_note}; {tally.comments} comments posted"
            ),
        ),
        at_most(
            "team day: peak PostgreSQL connections of the application (max_connections 100)",
            float(tally.peak_connections),
            "connections",
            float(budget),
            note=(
                f"pg_stat_activity every 0.2 s; "
                f"median {statistics.median(tally.connection_samples or [0]):.0f}; "
                'goal: the budget of README "Connection budget" for 2 web processes and one workers machine'
            ),
        ),
    ]
    return rows


def plan_for(ctx: Context) -> Plan:
    default = "30" if ctx.quick else "300"
    seconds = float(os.environ.get("PIWEB_BENCH_TEAMDAY_SECONDS", "") or default)
    return Plan(seconds=seconds)


@metric("team_day")
def team_day(ctx: Context) -> list[Result]:
    """Run a team's day against two ASGI processes and the workers on a private PostgreSQL and Redis."""
    plan = plan_for(ctx)
    files = [
        ctx.session(
            generate.SessionSpec(entries=plan.read_entries, seed=generate.DEFAULT_SEED + 700 + i)
        ).path
        for i in range(plan.read_sessions)
    ]
    folder = Path(tempfile.mkdtemp(prefix="piweb-teamday-"))
    try:
        tally, budget, _ = run_team_day(plan, folder, files)
        (ctx.data_dir / "team_day.json").write_bytes(orjson.dumps(tally.summary()))
        return results(plan, tally, budget)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
