"""The runner's loop: one socket out to piweb, one ``pi --mode rpc`` per run it is given.

For each run the runner writes the session as piweb holds it to a file of its own, starts Pi on that file
in the chosen workspace with this runner's tool allow-list, and sends the prompt. While Pi works it passes
on Pi's live events (the reply as it streams, each tool as it runs) and, after every message Pi writes,
the file's new complete lines, one batch at a time, each acknowledged before the next (the server matches
lines by id, so a batch sent twice is stored once). ``abort``, ``steer`` and ``follow_up`` from piweb are
Pi's own commands. The socket reconnects with growing pauses; Pi goes on working meanwhile, and what it
wrote goes out once the socket is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from piweb_sync.gitinfo import commits_between, git_state

from piweb_runner.hooks import trailer_env

log = logging.getLogger("piweb_runner")

ALL_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")
RELAYED = {"message_update", "tool_execution_start", "tool_execution_update", "tool_execution_end"}
WRITES = {"message_end", "turn_end", "agent_end", "compaction_end", "agent_settled"}
CLOSE_UNAUTHENTICATED, CLOSE_REVOKED = 4401, 4403
BACKOFF = (0.5, 1, 2, 5, 10, 30)
MAX_BATCH_BYTES = 4 * 1024 * 1024
DELTA_SECONDS = 0.05  # streamed text is sent in runs this long


@dataclass(frozen=True, slots=True)
class Workspace:
    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    server: str
    token: str
    name: str
    workspaces: list[Workspace]
    tools: list[str]
    labels: list[str]
    pi: list[str]
    state: Path
    commit_trailer: bool = False  # a Piweb-Session trailer on the commits Pi makes (hooks.py)


@dataclass(slots=True)
class Cursor:
    lines: int
    bytes: int
    last_id: str | None

    def as_json(self) -> dict[str, Any]:
        return {"lines": self.lines, "bytes": self.bytes, "lastId": self.last_id}


@dataclass(slots=True)
class PiRun:
    """One run: Pi's process, its session file and how much of it piweb acknowledged."""

    run: str
    file: Path
    header: str
    acked: Cursor
    proc: asyncio.subprocess.Process | None = None
    in_flight: Cursor | None = None  # where the batch awaiting its ack ends
    aborted: bool = False
    settled: bool = False
    ended: bool = False
    failure: str = ""
    follower: asyncio.Task[None] | None = None
    workspace: Path | None = None
    git_before: dict[str, str] | None = None  # the workspace's repository, branch and HEAD at the start
    deltas: list[tuple[tuple[str, Any], str]] = field(default_factory=list)  # reply text not yet sent
    delta_timer: asyncio.TimerHandle | None = None


class Runner:
    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self.socket: Any = None
        self.runs: dict[str, PiRun] = {}
        self.version = _pi_version(settings.pi)
        self.models = _pi_models(settings.pi)

    # -- the socket ---------------------------------------------------------------------------------------

    async def serve(self) -> int:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

        url = self.settings.server.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        failures = 0
        while True:
            try:
                async with connect(
                    f"{url}/ws/runner/",
                    additional_headers={"Authorization": f"Runner {self.settings.token}"},
                    open_timeout=10,
                    ping_interval=20,
                    max_size=64 * 1024 * 1024,
                ) as socket:
                    self.socket = socket
                    await self.hello()
                    failures = 0
                    log.info("piweb-runner: connected to %s as %s", self.settings.server, self.settings.name)
                    for run in list(self.runs.values()):
                        # What Pi wrote while the socket was away, from the last acknowledged line (a
                        # batch whose ack was lost goes again; piweb stores each line once).
                        run.in_flight = None
                        await self.flush(run)
                        await self.maybe_end(run)
                    async for raw in socket:
                        await self.receive(json.loads(raw))
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code in (CLOSE_UNAUTHENTICATED, CLOSE_REVOKED):
                    log.error("piweb-runner: the server refused this runner's token (closed %s)", code)
                    await self.abort_all()
                    return 3
                log.warning("piweb-runner: connection closed (%s); reconnecting", code)
            except InvalidStatus as exc:
                log.warning("piweb-runner: the server answered %s; retrying", exc.response.status_code)
            except (OSError, TimeoutError, EOFError, WebSocketException) as exc:
                # Refused, reset, cut mid-handshake: the network or the server is away; Pi works on.
                log.warning("piweb-runner: cannot reach %s (%r); retrying", self.settings.server, exc)
            self.socket = None
            await asyncio.sleep(BACKOFF[min(failures, len(BACKOFF) - 1)])
            failures += 1

    async def send(self, message: dict[str, Any]) -> bool:
        if self.socket is None:
            return False
        try:
            await self.socket.send(json.dumps(message))
            return True
        except Exception:  # the socket went away: the loop reconnects
            return False

    async def hello(self) -> None:
        await self.send(
            {
                "type": "hello",
                "name": self.settings.name,
                "workspaces": [w.name for w in self.settings.workspaces],
                "tools": self.settings.tools,
                "labels": self.settings.labels,
                "piVersion": self.version,
                "models": self.models,
            }
        )

    async def receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "dispatch":
            await self.start(message)
        elif kind == "command":
            await self.command(message)
        elif kind == "ack":
            run = self.runs.get(str(message.get("run")))
            if run is not None and run.in_flight is not None:
                run.acked, run.in_flight = run.in_flight, None
                await self.flush(run)
                await self.maybe_end(run)
        elif kind == "refused":
            run = self.runs.get(str(message.get("run")))
            log.warning("piweb-runner: refused: %s", message.get("error") or message.get("kind"))
            if run is not None:
                run.in_flight = None
                run.failure = f"piweb refused Pi's lines: {message.get('error') or message.get('kind')}"
                await self.stop_pi(run)

    # -- a run --------------------------------------------------------------------------------------------

    async def start(self, message: dict[str, Any]) -> None:
        run_id = str(message["run"])
        workspace = next((w for w in self.settings.workspaces if w.name == message.get("workspace")), None)
        if workspace is None or run_id in self.runs:
            refusal = {"type": "ended", "run": run_id, "status": "failed", "error": "no such workspace"}
            await self.send(refusal)
            return
        folder = self.settings.state / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / f"{_safe(str(message['piId']))}.jsonl"
        header = str(message["header"])
        lines = [str(x) for x in message.get("lines") or []]
        body = header + "\n" + "".join(line + "\n" for line in lines)
        file.write_text(body, encoding="utf-8")
        last_id = next((i for i in (_id_of(x) for x in reversed(lines)) if i), None)
        cursor = Cursor(len(lines), len(body.encode("utf-8")) - len((header + "\n").encode("utf-8")), last_id)
        run = PiRun(run_id, file, header, cursor, workspace=workspace.path)
        self.runs[run_id] = run
        run.git_before = await asyncio.to_thread(git_state, workspace.path)
        command = [*self.settings.pi, "--mode", "rpc", "--session", str(file)]
        command += ["--tools", ",".join(self.settings.tools)]
        env = None
        if self.settings.commit_trailer and run.git_before is not None:
            url = f"{self.settings.server}/sessions/{message.get('session')}/"
            env = trailer_env(self.settings.state, workspace.path, url)
        run.proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=workspace.path,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        await self.send({"type": "started", "run": run_id})
        run.follower = asyncio.create_task(self.follow(run))
        model = str(message.get("model") or "")
        if model in self.models:  # "provider/id", one Pi said it has
            provider, _, model_id = model.partition("/")
            await self.to_pi(run, {"type": "set_model", "provider": provider, "modelId": model_id})
        if message.get("thinkingLevel"):
            await self.to_pi(run, {"type": "set_thinking_level", "level": message["thinkingLevel"]})
        await self.to_pi(run, {"type": "prompt", "message": str(message["prompt"])})

    async def to_pi(self, run: PiRun, command: dict[str, Any]) -> None:
        if run.proc is None or run.proc.stdin is None or run.proc.returncode is not None:
            return
        run.proc.stdin.write((json.dumps(command) + "\n").encode("utf-8"))
        with contextlib.suppress(ConnectionError):
            await run.proc.stdin.drain()

    async def command(self, message: dict[str, Any]) -> None:
        run = self.runs.get(str(message.get("run")))
        if run is None:
            return
        kind = message.get("command")
        if kind == "abort":
            run.aborted = True
            await self.to_pi(run, {"type": "abort"})
        elif kind in ("steer", "follow_up"):
            await self.to_pi(run, {"type": kind, "message": str(message.get("message") or "")})

    async def follow(self, run: PiRun) -> None:
        """Read Pi's output until it settles or exits; pass events on, send lines after each write."""
        assert run.proc is not None and run.proc.stdout is not None
        async for raw in run.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "message_update" and self.merge(run, event):
                continue
            await self.send_deltas(run)
            if kind in RELAYED:
                await self.send({"type": "event", "run": run.run, "event": event})
            if kind in WRITES:
                await self.flush(run)
            if kind == "agent_settled":
                run.settled = True
                await self.maybe_end(run)
        # Pi exited: whatever it wrote goes out, then the run ends.
        await run.proc.wait()
        if not run.settled and not run.failure:
            err = b""
            if run.proc.stderr is not None:
                err = await run.proc.stderr.read()
            run.failure = f"Pi exited ({run.proc.returncode}): {err.decode(errors='replace')[-500:]}"
        run.settled = True
        await self.flush(run)
        await self.maybe_end(run)

    def merge(self, run: PiRun, event: dict[str, Any]) -> bool:
        """Keep a text or thinking delta to send with the next ones (a reply streams dozens a second; the
        page shows them in runs of DELTA_SECONDS just as well). False for any other update."""
        update = event.get("assistantMessageEvent")
        if not (isinstance(update, dict) and update.get("type") in ("text_delta", "thinking_delta")):
            return False
        key = (str(update["type"]), update.get("contentIndex"))
        if run.deltas and run.deltas[-1][0] == key:
            run.deltas[-1] = (key, run.deltas[-1][1] + str(update.get("delta") or ""))
        else:
            run.deltas.append((key, str(update.get("delta") or "")))
        if run.delta_timer is None:
            run.delta_timer = asyncio.get_running_loop().call_later(
                DELTA_SECONDS, lambda: asyncio.ensure_future(self.send_deltas(run))
            )
        return True

    async def send_deltas(self, run: PiRun) -> None:
        if run.delta_timer is not None:
            run.delta_timer.cancel()
            run.delta_timer = None
        pending, run.deltas = run.deltas, []
        for (kind, index), text in pending:
            update = {"type": kind, "contentIndex": index, "delta": text}
            event = {"type": "message_update", "assistantMessageEvent": update}
            await self.send({"type": "event", "run": run.run, "event": event})

    async def flush(self, run: PiRun) -> None:
        """Send the file's complete lines past what piweb acknowledged (one batch in flight at a time)."""
        if run.in_flight is not None or run.ended:
            return
        with run.file.open("rb") as handle:
            head = len((run.header + "\n").encode("utf-8"))
            handle.seek(head + run.acked.bytes)
            data = handle.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        # At most MAX_BATCH_BYTES a message (a single longer line goes alone, for piweb to judge).
        cut = data.rfind(b"\n", 0, MAX_BATCH_BYTES)
        if end >= MAX_BATCH_BYTES and cut >= 0:
            end = cut
        lines = data[: end + 1].decode("utf-8", errors="surrogateescape").splitlines()
        last_id = next((i for i in (_id_of(x) for x in reversed(lines)) if i), run.acked.last_id)
        target = Cursor(run.acked.lines + len(lines), run.acked.bytes + end + 1, last_id)
        message = {
            "type": "lines",
            "run": run.run,
            "header": run.header,
            "from": run.acked.as_json(),
            "to": {"lines": target.lines, "bytes": target.bytes},
            "lines": lines,
        }
        if await self.send(message):
            run.in_flight = target

    async def maybe_end(self, run: PiRun) -> None:
        """Once Pi settled and piweb holds every line, say how the run ended and let Pi go."""
        if run.ended or not run.settled or run.in_flight is not None:
            return
        await self.flush(run)
        if run.in_flight is not None:
            return
        status = "failed" if run.failure else "aborted" if run.aborted else "succeeded"
        ended = {"type": "ended", "run": run.run, "status": status, "error": run.failure}
        if run.git_before is not None and run.workspace is not None:
            ended["git"] = await asyncio.to_thread(git_report, run.workspace, run.git_before)
        if await self.send(ended):
            run.ended = True
            await self.stop_pi(run)
            self.runs.pop(run.run, None)

    async def stop_pi(self, run: PiRun) -> None:
        proc = run.proc
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()

    async def abort_all(self) -> None:
        for run in list(self.runs.values()):
            await self.to_pi(run, {"type": "abort"})
            await self.stop_pi(run)


def git_report(folder: Path, before: dict[str, str]) -> dict[str, Any]:
    """HEAD before and after a run and the commits between, oldest first, for piweb to link to the run."""
    after = git_state(folder) or {}
    head = after.get("head", "")
    return {
        "repository": after.get("repository") or before.get("repository", ""),
        "branch": after.get("branch", ""),
        "before": before.get("head", ""),
        "after": head,
        "commits": commits_between(folder, before.get("head", ""), head),
    }


def _id_of(line: str) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120] or "session"


def _pi_models(pi: list[str]) -> list[str]:
    """The models Pi offers on this machine, as ``provider/id`` (from ``pi --list-models``)."""
    try:
        done = subprocess.run([*pi, "--list-models"], capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return []
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    return [f"{row[0]}/{row[1]}" for row in rows if len(row) >= 2][:50]


def _pi_version(pi: list[str]) -> str:
    try:
        done = subprocess.run([*pi, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return ""
    return done.stdout.strip()[:100]
