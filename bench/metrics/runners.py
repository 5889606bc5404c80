"""Runners under load: 50 ``piweb-runner`` processes connected to one daphne, 20 of them running Pi at once.

daphne serves the bench database with a private Redis; 50 runners (the real client, one process each)
connect and say hello; 20 sessions (copies of one Pi wrote) get a run each at the same moment, on 20 of
them, against one scripted provider: a ``read`` tool call, then a streamed answer. A teammate's socket
follows each session, and a thread watches each runner's session file, so the time from Pi writing a line
to a follower hearing its append is measured end to end.

Rows: append → follower p95 (goal ≤ 250 ms); the runs' errors and lost or doubled lines (goal 0); the web
process's PostgreSQL connections at the peak against its pool (the budget), and with the 50 runners idle
against none connected (goal: no more).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db
from bench.metrics.live import _layer_for, daphne_on_private_redis
from bench.metrics.pi_package import PI_CLI, RpcPi
from bench.metrics.procs import REPO_DIR

CLIENT_SRC = REPO_DIR / "clients" / "piweb-sync" / "src"
RUNNERS, RUNS = 50, 20
QUICK_RUNNERS, QUICK_RUNS = 10, 4
SOLO_ROUNDS = 8
APP_NAME = "piweb-bench-runners-web"
ANSWER = " ".join(f"word{i}" for i in range(40))


IDLE_SECONDS = 10


def _db_now() -> Any:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        row = cursor.fetchone()
    return row[0] if row else None


def _busy_since(since: Any) -> int:
    """How many of daphne's connections ran a statement after ``since``."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state_change > %s",
            [APP_NAME, since],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _web_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


class Watch:
    """Note when each line of each runner's session file appears (polled every 5 ms)."""

    def __init__(self) -> None:
        self.files: dict[int, Path] = {}  # session pk → file
        self.seen: dict[int, list[tuple[float, str]]] = {}  # session pk → (time, entry id) per new line
        self.sizes: dict[int, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            for pk, path in list(self.files.items()):
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                start = self.sizes.get(pk, 0)
                if size <= start:
                    continue
                with path.open("rb") as handle:
                    handle.seek(start)
                    data = handle.read(size - start)
                end = data.rfind(b"\n")
                if end < 0:
                    continue
                self.sizes[pk] = start + end + 1
                for line in data[: end + 1].splitlines():
                    with contextlib.suppress(ValueError):
                        value = json.loads(line)
                        entry = isinstance(value, dict) and value.get("type") != "session"
                        if entry and isinstance(value.get("id"), str):
                            self.seen.setdefault(pk, []).append((now, value["id"]))
            time.sleep(0.005)


def _finish(run_ids: list[int], started: float, sample: Callable[[], object]) -> None:
    """Wait for the runs to end (at most 5 minutes), calling ``sample`` every 0.2 s meanwhile."""
    from agent.facade import AgentRun
    from core import realtime

    realtime.flush()
    while AgentRun.objects.filter(pk__in=run_ids, finished_at__isnull=True).exists():
        sample()
        if time.monotonic() - started > 300:
            raise RuntimeError("the runs did not finish in 5 minutes")
        time.sleep(0.2)


async def _follow(
    base_ws: str, pks: list[int], token: str, heard: dict[int, list[tuple[float, int]]], done: asyncio.Event
) -> None:
    from websockets.asyncio.client import connect

    async def one(pk: int) -> None:
        async with connect(
            f"{base_ws}/ws/sessions/{pk}/", additional_headers={"Authorization": f"Token {token}"}
        ) as ws:
            while not done.is_set():
                try:
                    text = await asyncio.wait_for(ws.recv(), 0.2)
                except TimeoutError:
                    continue
                message = json.loads(text)
                if message.get("event") == "entries_appended":
                    heard.setdefault(pk, []).append((time.monotonic(), int(message["seq"])))

    await asyncio.gather(*(one(pk) for pk in pks))


@metric("runners")
def runners(ctx: Context) -> list[Result]:
    """50 runners connected, 20 runs on them at once: append → follower, losses, the connection budget."""
    require_db(ctx)
    from django.test import override_settings

    from agent.facade import AgentRun
    from providers.llm import testserver as script
    from providers.llm.testserver import ProviderServer
    from runners import services as runner_services
    from runners.models import Runner
    from sessions_app import services
    from sessions_app.models import ApiToken, ChatSession, Entry

    if ctx.node is None:
        raise RuntimeError(ctx.node_problem or "node unavailable")
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed")
    count, runs = (QUICK_RUNNERS, QUICK_RUNS) if ctx.quick else (RUNNERS, RUNS)
    solo_rounds = 3 if ctx.quick else SOLO_ROUNDS
    with daphne_on_private_redis("runners", PGAPPNAME=APP_NAME) as served:
        folder, port, redis = served.folder, served.port, served.redis
        provider = ProviderServer().start()
        procs: list[subprocess.Popen[bytes]] = []
        watch = Watch()
        owner = bench_user()
        made: list[Any] = []
        try:
            url = served.url
            # One session written by Pi itself, copied under new ids for every run.
            seed = RpcPi(ctx, folder / "seed", provider.url, [], {})
            provider.enqueue(script.reply("Hello."))
            seed.turn("hello")
            seed.quit()
            lines = seed.file().read_text().splitlines()
            header = json.loads(lines[0])
            sessions = []
            for index in range(runs):
                copy = json.dumps(
                    {**header, "id": f"bench-runner-{index}-{os.getpid()}"}, separators=(",", ":")
                )
                data = ("\n".join([copy, *lines[1:]]) + "\n").encode()
                sessions.append(
                    services.import_jsonl(actor=owner, data=data, filename=f"r{index}.jsonl").session
                )
            time.sleep(2)
            idle_before = _web_connections()
            pi = shlex.join([ctx.node, str(ctx.bench_dir / PI_CLI), "--no-extensions", "--no-skills",
                             "--no-prompt-templates", "--no-context-files"])  # fmt: skip
            workspace = folder / "work"
            workspace.mkdir()
            (workspace / "notes.txt").write_text("The build needs Python 3.11.\n")
            for index in range(count):
                runner, token = runner_services.create_runner(actor=owner, name=f"bench-{index}")
                made.append(runner)
                env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "PIWEB_"))}
                env.update(
                    {
                        "PIWEB_URL": url,
                        "PIWEB_RUNNER_TOKEN": token,
                        "PIWEB_RUNNER_PI": pi,
                        "PYTHONPATH": str(CLIENT_SRC),
                        "PI_CODING_AGENT_DIR": str(folder / "seed" / "agent"),
                        "PI_OFFLINE": "1",
                        "PI_SKIP_VERSION_CHECK": "1",
                        "XDG_STATE_HOME": str(folder / f"state-{index}"),
                    }
                )
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "piweb_runner", "-w", f"work={workspace}", "--tools", "read"],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
            deadline = time.monotonic() + 120
            while Runner.objects.filter(pk__in=[r.pk for r in made]).exclude(info={}).count() < count:
                if time.monotonic() > deadline:
                    raise RuntimeError("the runners did not all connect")
                time.sleep(0.2)
            # The runners sit idle (their sockets ping): daphne's connections must do no work meanwhile.
            window = _db_now()
            time.sleep(IDLE_SECONDS)
            idle_busy = _busy_since(window)
            idle_with = _web_connections()
            chosen = [Runner.objects.get(pk=r.pk) for r in made[:runs]]
            for index, session in enumerate(sessions):
                watch.files[session.pk] = (
                    folder / f"state-{index}" / "piweb-runner" / "sessions" / f"{session.pi_id}.jsonl"
                )
            watch.thread.start()
            answer = script.reply(ANSWER, delay=0.01)
            api_token = ApiToken.objects.create(user=owner, name="bench-runners")[1]
            heard: dict[int, list[tuple[float, int]]] = {}
            known = {
                s.pk: set(Entry.objects.filter(session=s).values_list("entry_id", flat=True))
                for s in sessions
            }
            done = asyncio.Event()
            loop = asyncio.new_event_loop()
            follower = threading.Thread(
                target=loop.run_until_complete,
                args=(_follow(f"ws://127.0.0.1:{port}", [s.pk for s in sessions], api_token, heard, done),),
                daemon=True,
            )
            follower.start()
            time.sleep(1.5)  # the followers' sockets open
            peak = 0
            layer = {"default": _layer_for(redis.url)}
            with override_settings(CHANNEL_LAYERS=layer):
                # One run at a time first (a follower's view of a run, on a machine the Pis do not
                # saturate), then every run at once.
                for _ in range(solo_rounds):
                    provider.enqueue(script.tool_call("read", {"path": "notes.txt"}), answer)
                    solo = runner_services.dispatch_run(
                        actor=owner, session=sessions[0], runner=chosen[0], workspace="work", prompt="Again?"
                    ).pk
                    _finish([solo], time.monotonic(), lambda: None)
                for _ in sessions:
                    provider.enqueue(script.tool_call("read", {"path": "notes.txt"}), answer)
                started = time.monotonic()
                run_ids = [
                    runner_services.dispatch_run(
                        actor=owner, session=s, runner=r, workspace="work", prompt="What does notes.txt say?"
                    ).pk
                    for s, r in zip(sessions, chosen, strict=True)
                ]
                peaks: list[int] = []
                _finish(run_ids, started, lambda: peaks.append(_web_connections()))
                peak = max(peaks, default=0)
                elapsed = time.monotonic() - started
            time.sleep(1.0)
            loop.call_soon_threadsafe(done.set)
            follower.join(10)
            failed = AgentRun.objects.filter(pk__in=run_ids).exclude(status=AgentRun.Status.SUCCEEDED).count()
            lost = 0
            latencies: list[float] = []  # the runs at once
            alone: list[float] = []  # one run at a time
            for session in sessions:
                stored = list(
                    Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
                )
                on_disk = watch.files[session.pk].read_text().splitlines()[1:]
                lost += 0 if stored == on_disk else 1
                seqs = dict(Entry.objects.filter(session=session).values_list("entry_id", "seq"))
                for written, entry_id in watch.seen.get(session.pk, []):
                    if entry_id in known[session.pk]:
                        continue  # the session as dispatched, which the runner wrote out before starting Pi
                    seq = seqs.get(entry_id)
                    got = next(
                        (t for t, s in heard.get(session.pk, []) if seq is not None and s >= seq), None
                    )
                    if got is not None:
                        (alone if written < started else latencies).append(max(0.0, got - written) * 1000)
                    else:
                        lost += 1
            ChatSession.objects.filter(pk__in=[s.pk for s in sessions]).delete()
        finally:
            watch.stop.set()
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            for proc in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            provider.stop()
            Runner.objects.filter(pk__in=[r.pk for r in made]).delete()
            ApiToken.objects.filter(user=owner, name="bench-runners").delete()
    if not latencies or len(alone) < 2:
        raise RuntimeError("no append reached a follower")
    p95 = statistics.quantiles(latencies, n=20, method="inclusive")[18]
    alone_p95 = statistics.quantiles(alone, n=20, method="inclusive")[18]
    from piweb import config

    pool = config.DB_POOL_MAX
    load = os.getloadavg()[0]
    return [
        at_most(
            "runners.append_to_follower_p95",
            alone_p95,
            "ms",
            250,
            note=f"a line appearing in a runner's session file → a follower's socket hearing its append, one "
            f"run at a time ({solo_rounds} runs: real Pi, a read tool call, a streamed answer) with {count} "
            f"runners connected; {len(alone)} lines, p50 {statistics.median(alone):.0f} ms, "
            f"max {max(alone):.0f} ms",
        ),
        Result(
            metric="runners.append_to_follower_p95_all_at_once",
            value=p95,
            unit="ms",
            goal="reported",
            note=f"the same with {runs} runs at once: {runs} Pis and their runners share the machine's "
            f"{os.cpu_count()} cores with daphne; {len(latencies)} lines, p50 "
            f"{statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms; all runs done in "
            f"{elapsed:.1f} s; load {load:.1f}",
        ),
        at_most(
            "runners.failed_or_lost",
            float(failed + lost),
            "runs",
            0,
            note=f"{failed} runs not succeeded, {lost} sessions whose stored lines differ from the runner's "
            "file or lines no follower heard",
        ),
        at_most(
            "runners.web_connections_peak",
            float(peak),
            "conns",
            pool,
            note=f"daphne's PostgreSQL connections during the runs, against its pool "
            f"(PIWEB_DB_POOL_MAX {pool})",
        ),
        at_most(
            "runners.idle_db_work",
            float(idle_busy),
            "conns",
            0,
            note=f"daphne's connections that ran a statement while {count} runners sat connected and idle "
            f"for {IDLE_SECONDS} s; it held {idle_with} pooled connections then ({idle_before} before any "
            "runner), whatever the number of runners",
        ),
    ]
