"""The Pi package (clients/pi-piweb) in a running Pi: how soon a follower sees an entry, and Pi's own pace.

Two long-running Pi processes (``pi --mode rpc``) against one scripted provider on loopback take turns
that each read a file with Pi's own tool and answer: one loads the package and feeds daphne (with a
private Redis), the other loads no extension. Their turns alternate so both see the same machine.

- append → follower: a socket on the session (as a teammate's page) timestamps each ``entries_appended``
  event; each message entry Pi writes is timestamped by Pi's own ``message_end`` event. Goal p95 ≤ 250 ms.
- Pi's turn time (prompt sent → ``agent_end``), median with the package against without. Goal ≤ 1.02×.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric, ratio_at_most
from bench.metrics.db import require_db
from bench.metrics.live import daphne_on_private_redis
from bench.metrics.procs import REPO_DIR
from bench.metrics.serve import bench_token

PACKAGE = REPO_DIR / "clients" / "pi-piweb"
PI_CLI = "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
TURNS, QUICK_TURNS = 40, 8
# A streamed answer of about a third of a second, as a fast model's short reply.
ANSWER = " ".join(f"word{i}" for i in range(60))
PIECE_DELAY = 0.005


class RpcPi:
    """One ``pi --mode rpc`` process; each printed line is kept with the time it was read."""

    def __init__(self, ctx: Context, root: Path, provider_url: str, extra: list[str], env: dict[str, str]):
        agent, self.work = root / "agent", root / "work"
        agent.mkdir(parents=True)
        self.work.mkdir(parents=True)
        (self.work / "notes.txt").write_text("The build needs Python 3.11.\n")
        model = {
            "id": "fake-model",
            "name": "Fake",
            "reasoning": False,
            "input": ["text"],
            "contextWindow": 200000,  # no compaction: every turn is alike
            "maxTokens": 500,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        provider = {"baseUrl": f"{provider_url}/v1", "api": "openai-completions", "apiKey": "k"}
        (agent / "models.json").write_text(
            json.dumps({"providers": {"fake": {**provider, "models": [model]}}})
        )
        settings = {"defaultProvider": "fake", "defaultModel": "fake-model", "defaultThinkingLevel": "off"}
        (agent / "settings.json").write_text(json.dumps({**settings, "quietStartup": True}))
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "PIWEB_"))}
        self.env = {
            **base,
            **env,
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
        }
        assert ctx.node is not None
        command = [ctx.node, str(ctx.bench_dir / PI_CLI), "--mode", "rpc", "--tools", "read"]
        command += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-context-files", *extra]
        self.sessions = agent / "sessions"
        self.proc = subprocess.Popen(
            command,
            cwd=self.work,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.message_ends: list[float] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.monotonic()
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if value.get("type") == "message_end":
                self.message_ends.append(now)
            self.lines.put((now, value))

    def turn(self, text: str, timeout: float = 60) -> float:
        """Send a prompt; return the seconds until Pi's ``agent_end``."""
        assert self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.write(json.dumps({"type": "prompt", "message": text}) + "\n")
        self.proc.stdin.flush()
        deadline = started + timeout
        while True:
            try:
                when, value = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"Pi did not finish a turn in {timeout:.0f} s") from None
            if value.get("type") == "agent_end":
                return when - started

    def file(self) -> Path:
        [found] = sorted(self.sessions.rglob("*.jsonl"))
        return found

    def quit(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Follower:
    """A teammate's socket on the session, in its own thread, timestamping every append it hears."""

    def __init__(self, base_ws: str, pk: int, token: str) -> None:
        self.appends: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(base_ws, pk, token), daemon=True)
        self.thread.start()
        if not self.ready.wait(15):
            raise RuntimeError(f"the follower's socket did not open: {self.error}")

    def _run(self, base_ws: str, pk: int, token: str) -> None:
        try:
            asyncio.run(self._listen(base_ws, pk, token))
        except BaseException as exc:  # reported by the metric
            self.error = exc

    async def _listen(self, base_ws: str, pk: int, token: str) -> None:
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Token {token}"}
        async with connect(f"{base_ws}/ws/sessions/{pk}/", additional_headers=headers) as socket:
            self.ready.set()
            while not self.stop.is_set():
                try:
                    text = await asyncio.wait_for(socket.recv(), 0.2)
                except TimeoutError:
                    continue
                now = time.monotonic()
                message = json.loads(text)
                if message.get("event") == "entries_appended":
                    self.appends.append((now, int(message["seq"])))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _latencies(pi: RpcPi, follower: Follower, pk: int, since: float) -> list[float]:
    """Milliseconds from each message Pi wrote after ``since`` to the first append event covering it."""
    from sessions_app.models import Entry

    seqs = dict(Entry.objects.filter(session_id=pk).values_list("entry_id", "seq"))
    lines = [json.loads(x) for x in pi.file().read_text().splitlines()[1:]]
    messages = [x["id"] for x in lines if x.get("type") == "message"]
    if len(messages) != len(pi.message_ends):
        raise RuntimeError(f"Pi wrote {len(messages)} messages but told of {len(pi.message_ends)}")
    found: list[float] = []
    for entry_id, written in zip(messages, pi.message_ends, strict=True):
        if written < since:
            continue
        seq = seqs.get(entry_id)
        if seq is None:
            raise RuntimeError(f"piweb does not hold entry {entry_id}")
        heard = next((when for when, last in follower.appends if last >= seq), None)
        if heard is None:
            raise RuntimeError(f"the follower never heard entry {entry_id}")
        found.append((heard - written) * 1000)
    return found


@metric("pi_package")
def pi_package(ctx: Context) -> list[Result]:
    """Pi with the package: append → follower p95, and Pi's turn time with and without the package."""
    require_db(ctx)

    from providers.llm import testserver as script
    from providers.llm.testserver import ProviderServer
    from sessions_app.models import ChatSession

    if ctx.node is None:
        raise RuntimeError(ctx.node_problem or "node unavailable")
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed")
    turns = QUICK_TURNS if ctx.quick else TURNS
    provider = ProviderServer().start()
    pis: list[RpcPi] = []
    follower: Follower | None = None
    with_times: list[float] = []
    without_times: list[float] = []
    try:
        with daphne_on_private_redis("pi-package") as served, bench_token("pi-package") as token:
            folder, port, url = served.folder, served.port, served.url
            try:
                loaded = RpcPi(
                    ctx, folder / "with", provider.url, ["-e", str(PACKAGE)],
                    {"PIWEB_URL": url, "PIWEB_TOKEN": token, "PIWEB_DEVICE": "bench"},
                )  # fmt: skip
                bare = RpcPi(ctx, folder / "without", provider.url, [], {})
                pis += [loaded, bare]
                for pi in (loaded, bare):  # a first turn each: Pi warms up, the session reaches piweb
                    provider.enqueue(script.tool_call("read", {"path": "notes.txt"}), script.reply("ok"))
                    pi.turn("warm up")
                pi_id = json.loads(loaded.file().read_text().splitlines()[0])["id"]
                deadline = time.monotonic() + 15
                while (
                    session := ChatSession.objects.filter(owner=bench_user(), pi_id=pi_id).first()
                ) is None:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the package's session never reached piweb")
                    time.sleep(0.1)
                follower = Follower(f"ws://127.0.0.1:{port}", session.pk, token)
                since = time.monotonic()
                answer = script.reply(ANSWER, delay=PIECE_DELAY)
                for index in range(turns):
                    # Alternate which goes first, so neither always follows the other's leftover work.
                    order = (loaded, bare) if index % 2 == 0 else (bare, loaded)
                    for pi in order:
                        provider.enqueue(script.tool_call("read", {"path": "notes.txt"}), answer)
                        took = pi.turn(f"turn {index}")
                        (with_times if pi is loaded else without_times).append(took)
                time.sleep(1.0)  # the last entries reach the follower
                latencies = _latencies(loaded, follower, session.pk, since)
                ChatSession.objects.filter(pk=session.pk).delete()
            finally:
                if follower is not None:
                    follower.close()
                for pi in pis:
                    pi.quit()
    finally:
        provider.stop()
    p95 = statistics.quantiles(latencies, n=20, method="inclusive")[18]
    loaded_ms, bare_ms = statistics.median(with_times) * 1000, statistics.median(without_times) * 1000
    load = os.getloadavg()[0]
    return [
        at_most(
            "pi_package.append_to_follower_p95",
            p95,
            "ms",
            250,
            note=f"Pi (RPC, package loaded) writes a message → a token socket on daphne + private Redis "
            f"hears its append; {len(latencies)} messages over {turns} turns with a read tool call each; p50 "
            f"{statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms; load {load:.1f}",
        ),
        ratio_at_most(
            "pi_package.turn_time",
            loaded_ms,
            "ms",
            baseline=bare_ms,
            limit=1.02,
            against="the same Pi without the package",
            note=f"median prompt → agent_end over {turns} alternating turns each (a read tool call, then a "
            f"streamed answer of ~{PIECE_DELAY * 60 * 1000:.0f} ms) on the scripted provider; with "
            f"{loaded_ms:.0f} ms, without {bare_ms:.0f} ms",
        ),
    ]
