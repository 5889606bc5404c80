"""Goals measured against running servers on loopback: REST reads and live events to subscribers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import big_size, load_session, require_db, session_pk
from bench.metrics.procs import REPO_DIR, free_port, status_kb, stop, wait_for_port

CONNECTIONS = 16
LOAD_SECONDS = 5.0
WARMUP_SECONDS = 1.0
SUBSCRIBERS = 50
EVENTS = 40


@contextlib.contextmanager
def bench_token(name: str) -> Iterator[str]:
    """An API token of the bench user for one metric, revoked afterwards so runs leave none behind."""
    from sessions_app.models import ApiToken

    row, token = ApiToken.objects.create(user=bench_user(), name=name)
    try:
        yield token
    finally:
        row.delete()


def server_env() -> dict[str, str]:
    """Return a production-like environment for the app server, on the bench database."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "PIWEB_LOG_LEVEL": "WARNING",
            "DJANGO_LOG_LEVEL": "WARNING",
        }
    )
    return env


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _exchange(conn: Connection, request: bytes) -> tuple[bool, bool]:
    """Send one request and read its answer; return (it was a 200, the server closes the connection)."""
    reader, writer = conn
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    await reader.readexactly(length)
    return head[9:12] == b"200", b"connection: close" in head.lower()


async def _client(
    conns: list[Connection], index: int, request: bytes, port: int, stop_at: float, counts: dict[str, int]
) -> None:
    """Send request over one keep-alive connection until stop_at, counting 200s and others."""
    while time.perf_counter() < stop_at:
        ok, closes = await _exchange(conns[index], request)
        counts["ok" if ok else "other"] += 1
        if closes:
            conns[index][1].close()
            conns[index] = await asyncio.open_connection("127.0.0.1", port)


async def _answered(request: bytes, port: int, timeout: float = 60.0) -> None:
    """Wait until the server answers one request (its workers have loaded the application)."""
    deadline = time.perf_counter() + timeout
    while True:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            conn = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout=5.0)
            try:
                if (await asyncio.wait_for(_exchange(conn, request), timeout=5.0))[0]:
                    return
            finally:
                conn[1].close()
        if time.perf_counter() > deadline:
            raise RuntimeError(f"server answered no request with a 200 within {timeout:.0f} s")
        await asyncio.sleep(0.1)


def _connections_per_worker(workers: list[int], port: int, client_ports: set[int]) -> list[int]:
    """Return how many of the client's connections each worker process holds (from /proc)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                if local == port and remote in client_ports:
                    inodes.add(fields[9])
    held = []
    for pid in workers:
        count = 0
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    count += target.startswith("socket:[") and target[8:-1] in inodes
        held.append(count)
    return held


async def _balanced(request: bytes, port: int, workers: list[int]) -> tuple[list[Connection], list[int]]:
    """Open the load's connections so that every worker holds its share, as a proxy would spread them.

    Which worker accepts a connection is a race; on a busy machine one may take all sixteen, and the
    others then serve nothing for the whole run. So the connections are opened again until they are
    spread (at most 30 tries); the spread is returned for the report.
    """
    held: list[int] = []
    for _ in range(30):
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CONNECTIONS)]
        for conn in conns:  # answered: every connection has been accepted by some worker
            await _exchange(conn, request)
        ports = {int(writer.get_extra_info("sockname")[1]) for _, writer in conns}
        held = _connections_per_worker(workers, port, ports)
        if len(workers) < 2 or sum(held) < CONNECTIONS or max(held) - min(held) <= 2:
            return conns, held
        for _, writer in conns:
            writer.close()
    return conns, held


async def _load(conns: list[Connection], request: bytes, port: int, seconds: float) -> dict[str, int]:
    counts = {"ok": 0, "other": 0}
    stop_at = time.perf_counter() + seconds
    await asyncio.gather(*(_client(conns, i, request, port, stop_at, counts) for i in range(len(conns))))
    return counts


async def _measure(request: bytes, port: int, workers: list[int]) -> tuple[dict[str, int], float, list[int]]:
    await _answered(request, port)
    conns, held = await _balanced(request, port, workers)
    try:
        await _load(conns, request, port, WARMUP_SECONDS)
        started = time.perf_counter()
        counts = await _load(conns, request, port, LOAD_SECONDS)
        return counts, time.perf_counter() - started, held
    finally:
        for _, writer in conns:
            writer.close()


def _workers_of(proc: subprocess.Popen[bytes], count: int, timeout: float = 30.0) -> list[int]:
    """Return the pids of gunicorn's worker processes once all of them have started."""
    deadline = time.monotonic() + timeout
    children: list[int] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            children = [
                int(pid) for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            ]
        if len(children) >= count:
            return children
        time.sleep(0.05)
    return children


def serve_and_load(
    request: bytes, *, workers: int, threads: int = 8, settings: str = ""
) -> tuple[float, int, list[int]]:
    """Serve the app with gunicorn (gthread), load it over keep-alive connections.

    Return (req/s, errors, the connections each worker held).
    """
    port = free_port()
    env = server_env()
    if settings:
        env["DJANGO_SETTINGS_MODULE"] = settings
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "piweb.wsgi:application",
            "-k",
            "gthread",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--keep-alive",
            "30",
            # Every worker starts with the application loaded, so all of them accept from the start.
            "--preload",
            "--log-level",
            "warning",
        ],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        counts, elapsed, held = asyncio.run(_measure(request, port, _workers_of(proc, workers)))
    finally:
        stop(proc)
    return counts["ok"] / elapsed, counts["other"], held


@metric("rest_read")
def rest_read(ctx: Context) -> list[Result]:
    """Load GET /api/sessions/<pk>/ over 16 keep-alive connections: 2 server processes, 1, a minimal view."""
    require_db(ctx)
    pk = session_pk(ctx, "1k")
    with bench_token("bench") as token:
        return _rest_read(pk, token)


def _rest_read(pk: int, token: str) -> list[Result]:
    def request(path: str) -> bytes:
        return (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()

    minimal, _, _ = serve_and_load(request("/minimal/"), workers=2, settings="bench.minimal_settings")
    two, two_errors, spread = serve_and_load(request(f"/api/sessions/{pk}/"), workers=2)
    one, one_errors, _ = serve_and_load(request(f"/api/sessions/{pk}/"), workers=1)
    how = (
        f"gunicorn gthread ×8 threads (--preload), DEBUG off, token auth; {CONNECTIONS} keep-alive "
        f"connections from one asyncio client, spread over the workers ({'+'.join(map(str, spread))}), "
        f"for {LOAD_SECONDS:.0f} s on the same 2 cores"
    )
    return [
        Result(
            metric=f"REST read GET /api/sessions/<pk>/, {CONNECTIONS} connections, 2 processes",
            value=two,
            unit="req/s",
            goal="≥ 1000 req/s, no errors",
            baseline=minimal,
            ratio=two / minimal if minimal else None,
            met=two >= 1000 and two_errors == 0,
            note=f"{how}; {two_errors} errors; baseline: a minimal DRF view (AllowAny, no database) "
            "under the same server",
        ),
        Result(
            metric="REST read, 2 server processes vs 1",
            value=two,
            unit="req/s",
            goal="reference",
            baseline=one,
            ratio=two / one if one else None,
            note=f"1 process: {one:.0f} req/s ({one_errors} errors); each process has 8 threads",
        ),
    ]


# -- live events ----------------------------------------------------------------------------------------


def _append_and_stamp(pk: int, text: str) -> tuple[float, int]:
    """Append one entry and return (the moment its transaction committed, the session's last seq)."""
    from django.db import transaction

    from sessions_app.services import append_entries

    stamp: list[float] = []
    session = load_session(pk)
    with transaction.atomic():
        # Registered before the service's own hook, so it runs first: right after COMMIT returns.
        transaction.on_commit(lambda: stamp.append(time.perf_counter()))
        rows = append_entries(
            session=session,
            actor=session.owner,
            entries=[{"type": "custom", "customType": "bench", "data": text}],
        )
    return stamp[0], rows[-1].seq


async def _live(pk: int) -> tuple[list[float], int]:
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer
    from django.db import connections

    from core.realtime import group_name

    layer: Any = get_channel_layer()
    group = group_name(pk)
    channels = [await layer.new_channel() for _ in range(SUBSCRIBERS)]
    for channel in channels:
        await layer.group_add(group, channel)
    received: dict[int, list[float]] = {}
    arrived: dict[int, asyncio.Event] = {}

    async def receive(channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            now = time.perf_counter()
            seq = message.get("seq")
            if isinstance(seq, int):
                received.setdefault(seq, []).append(now)
                if len(received[seq]) >= SUBSCRIBERS and seq in arrived:
                    arrived[seq].set()

    tasks = [asyncio.create_task(receive(c)) for c in channels]
    latencies: list[float] = []
    missing = 0
    append = sync_to_async(_append_and_stamp, thread_sensitive=True)
    try:
        for i in range(EVENTS):
            committed, seq = await append(pk, f"live {i}")
            arrived.setdefault(seq, asyncio.Event())
            if len(received.get(seq, [])) < SUBSCRIBERS:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived[seq].wait(), timeout=2.0)
            got = received.get(seq, [])
            missing += SUBSCRIBERS - len(got)
            latencies.extend((t - committed) * 1000 for t in got)
            await asyncio.sleep(0.02)
    finally:
        for task in tasks:
            task.cancel()
        for channel in channels:
            await layer.group_discard(group, channel)
        await sync_to_async(connections.close_all, thread_sensitive=True)()
    return latencies, missing


@metric("live_events")
def live_events(ctx: Context) -> list[Result]:
    """Measure commit → receive latency of live events to 50 subscribers of one session."""
    require_db(ctx)
    from django.conf import settings

    pk = session_pk(ctx, big_size(ctx))
    backend = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
    latencies, missing = asyncio.run(_live(pk))
    if not latencies:
        raise RuntimeError("no event reached a subscriber")
    p95 = statistics.quantiles(latencies, n=20, method="inclusive")[18]
    routing = (REPO_DIR / "sessions_app" / "routing.py").exists()
    how = f"{backend} group, {SUBSCRIBERS} channel receivers in one process (no websocket hop" + (
        "; live/routing.py exists but the websocket path is not measured yet)" if routing else ")"
    )
    row = at_most(
        f"live event commit → subscriber, {SUBSCRIBERS} subscribers, p95",
        p95,
        "ms",
        150,
        note=(
            f"{EVENTS} appends via services (on_commit → group_send); p50 {statistics.median(latencies):.1f} "
            f"ms, max {max(latencies):.1f} ms; {missing} deliveries missing; {how}"
        ),
    )
    if missing:
        return [Result(**{**_as_dict(row), "met": False})]
    return [row]


def _as_dict(row: Result) -> dict[str, Any]:
    return {name: getattr(row, name) for name in Result.__slots__}


# -- memory of a web process ----------------------------------------------------------------------------


@metric("web_rss")
def web_rss(ctx: Context) -> list[Result]:
    """Peak RSS of one gunicorn worker serving the biggest session's pages (read, tree, context, export)."""
    require_db(ctx)
    size = big_size(ctx)
    pk = session_pk(ctx, size)
    file_mb = int(ctx.session(size).meta["bytes"]) / 1e6
    pages = ["", "tree/", "context/", "path/?limit=2000", "entries/?limit=1000", "export/"]
    with bench_token("bench-rss") as token:
        before, peak = _serve_pages(pk, token, pages)
    return [
        Result(
            metric=f"web process peak RSS serving the {size} session's pages",
            value=peak / 1e6,
            unit="MB",
            goal="reference",
            baseline=file_mb,
            ratio=peak / 1e6 / file_mb,
            note=f"one gunicorn worker (4 threads), VmHWM after {', '.join(p or 'session' for p in pages)} "
            f"twice; {before / 1e6:.0f} MB before the first request; baseline: the session file's size",
        )
    ]


def _serve_pages(pk: int, token: str, pages: list[str]) -> tuple[int, int]:
    """Fetch each page twice from one gunicorn worker; return its VmHWM before and after, in bytes."""
    import httpx

    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "piweb.wsgi:application",
            "-k",
            "gthread",
            "--workers",
            "1",
            "--threads",
            "4",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=REPO_DIR,
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        worker = int(children[0])
        before = status_kb(worker, "VmHWM") * 1024
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as client:
            for _ in range(2):
                for page in pages:
                    with client.stream("GET", f"/api/sessions/{pk}/{page}") as response:
                        if response.status_code != 200:
                            raise RuntimeError(f"{page or 'session'} answered {response.status_code}")
                        for _chunk in response.iter_bytes():
                            pass
        peak = status_kb(worker, "VmHWM") * 1024
    finally:
        stop(proc)
    return before, peak
