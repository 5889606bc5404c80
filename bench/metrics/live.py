"""Live events through a real server: commit → WebSocket client with 200 sockets, and a Redis restart.

daphne serves the app on the bench database and a private redis-server (never the shared one, which a
restart here must not touch). The bench process commits appends itself, stamping the moment each commit
returns, and publishes on the same private Redis; 200 clients hold real sockets as session pages do.
Each client keeps the highest sequence it holds and, when a ``state`` or event names a later one,
fetches ``entries?since=`` over HTTP (the sequence resync). Then Redis is killed and started again while
appends continue: every client must reconnect and end holding exactly the server's entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db
from bench.metrics.procs import REPO_DIR, free_port, wait_for_port
from bench.metrics.serve import _append_and_stamp, server_env

SOCKETS = 200
EVENTS = 40
DOWNTIME_APPENDS = 5
AFTER_APPENDS = 5
EVENT_WAIT_S = 2.0
RECONVERGE_LIMIT_S = 60.0
SYNC_EVERY_S = 20.0  # as static/sessions_app/live.js


@dataclass(slots=True)
class Viewer:
    """One page's socket: the sequence it holds, what it fetched, and when each event arrived."""

    index: int
    held: int
    cursor: str | None
    fetched: list[int] = field(default_factory=list)
    arrivals: dict[int, float] = field(default_factory=dict)
    connects: int = 0
    failed_fetches: int = 0
    last_error: str = ""
    # While true, the next sequence announced by an event is taken as held (the steady phase measures
    # delivery only); afterwards every advance goes through fetching entries.
    trust_events: bool = True
    catching: asyncio.Lock = field(default_factory=asyncio.Lock)
    fetches: set[asyncio.Task[None]] = field(default_factory=set)

    async def catch_up(self, http: Any, pk: int) -> None:
        """The sequence resync: fetch every entry after the last one held (a failed fetch is retried)."""
        try:
            await self._catch_up(http, pk)
        except Exception as exc:
            self.last_error = "died: " + repr(exc)
            raise

    async def _catch_up(self, http: Any, pk: int) -> None:
        async with self.catching:
            while True:
                params = {"limit": "500", **({"since": self.cursor} if self.cursor else {})}
                try:
                    response = await http.get(f"/api/sessions/{pk}/entries/", params=params)
                    response.raise_for_status()
                except Exception as exc:
                    self.failed_fetches += 1
                    self.last_error = repr(exc)
                    await asyncio.sleep(0.5)
                    continue
                body = response.json()
                for row in body["entries"]:
                    self.fetched.append(row["seq"])
                    self.cursor, self.held = row["id"], max(self.held, row["seq"])
                if not body["hasMore"]:
                    return

    async def sync_every(self, socket: Any) -> None:
        """Ask for the current position now and then, as the page does (live.js, every 20 s)."""
        with contextlib.suppress(Exception):
            # Pages open at different moments, so their syncs do not come all at once.
            await asyncio.sleep(random.uniform(0, SYNC_EVERY_S))
            while True:
                await socket.send(json.dumps({"type": "sync", "seq": self.held}))
                await asyncio.sleep(SYNC_EVERY_S)

    async def run(
        self, base: str, pk: int, cookie: str, http: Any, stop: asyncio.Event, handshakes: asyncio.Semaphore
    ) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import WebSocketException

        url = base.replace("http", "ws", 1) + f"/ws/sessions/{pk}/"
        delay = 0.2
        while not stop.is_set():
            try:
                # Handshakes go a few at a time, as pages opening over a while would; a storm of
                # abandoned handshakes would measure the retry storm instead of the events.
                async with handshakes:
                    socket = await connect(
                        url,
                        origin=base,
                        additional_headers={"Cookie": cookie},
                        open_timeout=30,
                        ping_interval=None,
                    )  # type: ignore[arg-type]
                async with socket:
                    self.connects += 1
                    delay = 0.2
                    syncing = asyncio.create_task(self.sync_every(socket))
                    self.fetches.add(syncing)
                    syncing.add_done_callback(self.fetches.discard)
                    async for raw in socket:
                        now = time.perf_counter()
                        message = json.loads(raw)
                        seq = message.get("seq")
                        if not isinstance(seq, int):
                            continue
                        if message["type"] == "event":
                            self.arrivals.setdefault(seq, now)
                        if seq > self.held:
                            if message["type"] == "event" and seq == self.held + 1 and self.trust_events:
                                self.held = seq
                            else:
                                fetch = asyncio.create_task(self.catch_up(http, pk))
                                self.fetches.add(fetch)
                                fetch.add_done_callback(self.fetches.discard)
                        if stop.is_set():
                            return
            except (OSError, WebSocketException, TimeoutError):
                pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


class PrivateRedis:
    """A redis-server on a free loopback port that keeps nothing, so a restart forgets every group."""

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

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


@dataclass(frozen=True, slots=True)
class Served:
    """daphne on the bench database with a private Redis, in a folder of its own (its log is there)."""

    port: int
    redis: PrivateRedis
    folder: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def daphne_on_private_redis(name: str, **env: str) -> Iterator[Served]:
    """Serve the app with daphne and a private redis-server for one metric; stop both afterwards."""
    from django.db import connections

    folder = Path(tempfile.mkdtemp(prefix=f"piweb-bench-{name}-"))
    redis = PrivateRedis(folder)
    redis.start()
    port = free_port()
    daphne = str(Path(sys.executable).parent / "daphne")
    web = subprocess.Popen(
        [daphne, "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
        cwd=REPO_DIR,
        env={**server_env(), "REDIS_URL": redis.url, "PIWEB_READY_WORKERS": "0", **env},
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "daphne.log", "wb"),  # noqa: SIM115 - closed with the process
        start_new_session=True,
    )
    try:
        wait_for_port(port, web)
        yield Served(port, redis, folder)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(web.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            web.wait(timeout=10)
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGKILL)
        redis.kill()
        connections.close_all()
        shutil.copy(folder / "daphne.log", Path(tempfile.gettempdir()) / f"piweb-bench-{name}-daphne.log")
        shutil.rmtree(folder, ignore_errors=True)


def _cookie() -> str:
    from django.test import Client

    client = Client()
    client.force_login(bench_user())
    return f"sessionid={client.cookies['sessionid'].value}"


def _new_session() -> tuple[int, int]:
    from sessions_app.services import append_entries, create_session

    session = create_session(actor=bench_user(), cwd="/bench", name="live sockets")
    rows = append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "custom", "customType": "bench", "data": "start"}],
    )
    return session.pk, rows[-1].seq


def _server_seqs(pk: int) -> list[int]:
    from sessions_app.models import Entry

    return list(Entry.objects.filter(session_id=pk).order_by("seq").values_list("seq", flat=True))


async def _scenario(
    base: str, pk: int, start_seq: int, redis: PrivateRedis, sockets: int, events: int, cookie: str
) -> dict[str, Any]:
    import httpx
    from asgiref.sync import sync_to_async

    def in_db_thread(fn: Any, *args: Any) -> Any:
        return sync_to_async(fn, thread_sensitive=True)(*args)

    viewers = [Viewer(i, start_seq, None) for i in range(sockets)]
    stop = asyncio.Event()
    # A few keep-alive connections: every concurrent request holds a server thread and a database
    # connection, and the resync after the restart would otherwise open hundreds at once.
    limits = httpx.Limits(max_connections=8)
    async with httpx.AsyncClient(
        base_url=base, headers={"Cookie": cookie}, timeout=20, limits=limits
    ) as http:
        handshakes = asyncio.Semaphore(20)
        tasks = [asyncio.create_task(v.run(base, pk, cookie, http, stop, handshakes)) for v in viewers]
        deadline = time.monotonic() + 120
        while sum(1 for v in viewers if v.connects) < sockets:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"only {sum(1 for v in viewers if v.connects)} of {sockets} sockets opened"
                )
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        append = in_db_thread
        latencies: list[float] = []
        missed = 0
        for i in range(events):
            committed, seq = await append(_append_and_stamp, pk, f"live {i}")
            wait_until = time.perf_counter() + EVENT_WAIT_S
            while time.perf_counter() < wait_until and any(seq not in v.arrivals for v in viewers):
                await asyncio.sleep(0.005)
            for v in viewers:
                if seq in v.arrivals:
                    latencies.append((v.arrivals[seq] - committed) * 1000)
                else:
                    missed += 1
            await asyncio.sleep(0.05)
        # A forced Redis restart: appends while it is down are announced to nobody.
        for v in viewers:
            v.trust_events = False  # from here on every client resyncs by fetching
        await asyncio.to_thread(redis.kill)
        for i in range(DOWNTIME_APPENDS):
            await append(_append_and_stamp, pk, f"while down {i}")
        restarted = time.perf_counter()
        await asyncio.to_thread(redis.start)
        for i in range(AFTER_APPENDS):
            await asyncio.sleep(0.5)
            await append(_append_and_stamp, pk, f"after restart {i}")
        server = await in_db_thread(_server_seqs, pk)
        last = server[-1]
        converged_at: float | None = None
        limit = time.perf_counter() + RECONVERGE_LIMIT_S
        while time.perf_counter() < limit:
            if all(v.held == last for v in viewers):
                converged_at = time.perf_counter()
                break
            await asyncio.sleep(0.05)
        stop.set()
        pending = [*tasks, *(f for v in viewers for f in v.fetches)]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    behind = [v for v in viewers if v.held != last]
    if behind:  # who is behind, and why, for whoever reads the log
        detail = [(v.index, v.held, v.connects, v.failed_fetches, v.last_error) for v in behind[:5]]
        print(
            f"bench: behind (index, held, connects, failed fetches, error): {detail} of {last}",
            file=sys.stderr,
        )
    # Whatever a client fetched must be the server's entries, in order, with no gap and no duplicate.
    wrong = sum(1 for v in viewers if v.fetched and v.fetched != [s for s in server if s > v.fetched[0] - 1])
    return {
        "latencies": latencies,
        "missed": missed,
        "reconverge_s": (converged_at - restarted) if converged_at is not None else None,
        "behind": len(behind),
        "wrong": wrong,
        "reconnected": sum(1 for v in viewers if v.connects >= 2),
        "failed_fetches": sum(v.failed_fetches for v in viewers),
    }


@metric("live_sockets")
def live_sockets(ctx: Context) -> list[Result]:
    """200 real sockets through daphne: commit → client p95, misses, reconvergence after a Redis restart."""
    require_db(ctx)
    from django.db import connections
    from django.test import override_settings

    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed")
    sockets, events = (50, 10) if ctx.quick else (SOCKETS, EVENTS)
    folder = Path(tempfile.mkdtemp(prefix="piweb-bench-live-"))
    redis = PrivateRedis(folder)
    redis.start()
    port = free_port()
    from django.conf import settings

    # The server decodes the session cookie made here, so it signs with this process's key.
    env = {**server_env(), "REDIS_URL": redis.url, "DJANGO_SECRET_KEY": settings.SECRET_KEY}
    daphne = str(Path(sys.executable).parent / "daphne")
    web = subprocess.Popen(
        [daphne, "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "daphne.log", "wb"),  # noqa: SIM115 - closed with the process
        start_new_session=True,
    )
    layer = {"default": {**_layer_for(redis.url)}}
    try:
        wait_for_port(port, web)
        pk, start_seq = _new_session()
        # This process publishes its commits on the server's Redis, as a web process would.
        with override_settings(CHANNEL_LAYERS=layer):
            outcome = asyncio.run(
                _scenario(f"http://127.0.0.1:{port}", pk, start_seq, redis, sockets, events, _cookie())
            )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(web.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            web.wait(timeout=10)
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGKILL)
        redis.kill()
        connections.close_all()
        shutil.copy(folder / "daphne.log", Path(tempfile.gettempdir()) / "piweb-bench-live-daphne.log")
        shutil.rmtree(folder, ignore_errors=True)
    latencies = outcome["latencies"]
    if not latencies:
        raise RuntimeError("no event reached a socket")
    p95 = statistics.quantiles(latencies, n=20, method="inclusive")[18]
    reconverge = outcome["reconverge_s"]
    note = (
        f"daphne + private Redis, {sockets} sockets (cookie auth) × {events} appends committed in the bench "
        f"process; p50 {statistics.median(latencies):.1f} ms, max {max(latencies):.1f} ms; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"{outcome['missed']} deliveries missed. Redis SIGKILLed and restarted with {DOWNTIME_APPENDS} "
        f"appends while down and {AFTER_APPENDS} after: {outcome['reconnected']} sockets reconnected, "
        f"{outcome['behind']} clients behind, {outcome['wrong']} with wrong entries, all converged "
        + (f"{reconverge:.1f} s after the restart" if reconverge is not None else "NEVER")
    )
    row = at_most(
        f"live commit → WebSocket client, {sockets} sockets via daphne, p95", p95, "ms", 150, note=note
    )
    ok = outcome["missed"] == 0 and reconverge is not None and outcome["wrong"] == 0
    rows = [row if ok else Result(**{**{n: getattr(row, n) for n in Result.__slots__}, "met": False})]
    rows.append(
        at_most(
            f"live reconvergence after a Redis restart, {sockets} sockets",
            reconverge if reconverge is not None else float("inf"),
            "s",
            RECONVERGE_LIMIT_S,
            note="every client holds exactly the server's entries again, through the sequence resync",
        )
    )
    return rows


def _layer_for(url: str) -> dict[str, Any]:
    from piweb.config import channel_layers_config

    return dict(channel_layers_config({"REDIS_URL": url}, base_dir=REPO_DIR)["default"])
