"""The runner's socket: ``/ws/runner/``, opened by ``piweb-runner`` with ``Authorization: Runner <token>``.

The runner speaks first with ``hello`` (what it offers), then for each run it was dispatched:
``started``, ``lines`` (Pi's new complete lines, with the file cursor, stored as a sync push into that run's
session only and answered with ``ack`` or ``refused``), ``event`` (Pi's live events: text deltas and tool
executions, relayed to the session's pages) and ``ended``. The server sends it ``dispatch`` and
``command`` (``abort``, ``steer``, ``follow_up``). A revoked runner is closed at once; between messages the
socket holds no database connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from core import realtime
from runners import services
from runners.models import Runner
from sessions_app.facade import InvalidSessionFile
from sync.facade import Cursor, SyncConflict, SyncCursorMismatch

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_REVOKED = 4403
MAX_INFO_ITEMS = 50
MAX_TEXT = 200
_orphans: set[asyncio.Task[None]] = set()  # kept until done, so they are not collected mid-sleep


def _token(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "runner":
                return token.strip()
    return ""


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v)[:MAX_TEXT] for v in value[:MAX_INFO_ITEMS] if isinstance(v, str | int | float)]


def clean_info(content: dict[str, Any]) -> dict[str, Any]:
    """What a runner may say of itself, trimmed: lists of short strings and a version."""
    return {
        "workspaces": _strings(content.get("workspaces")),
        "tools": _strings(content.get("tools")),
        "models": _strings(content.get("models")),
        "labels": _strings(content.get("labels")),
        "piVersion": str(content.get("piVersion") or "")[:MAX_TEXT],
        "name": str(content.get("name") or "")[:MAX_TEXT],
    }


class RunnerConsumer(AsyncJsonWebsocketConsumer):
    runner: Runner | None = None
    group: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions: dict[str, int] = {}  # run id → its session, for the runs this socket spoke of

    async def connect(self) -> None:
        token = _token(self.scope)
        runner = await database_sync_to_async(services.runner_by_token)(token) if token else None
        if runner is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.runner = runner
        self.group = services.group_of(runner.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await database_sync_to_async(services.runner_connected)(runner, connected=True)
        await database_sync_to_async(services.announce_runner_state)(runner, online=True)
        await self.send_json({"type": "welcome", "runner": runner.pk, "name": runner.name})

    async def disconnect(self, code: int) -> None:
        if self.runner is None:
            return
        await self.channel_layer.group_discard(self.group, self.channel_name)
        await database_sync_to_async(services.runner_connected)(self.runner, connected=False)
        await database_sync_to_async(services.announce_runner_state)(self.runner, online=False)
        # A runner that comes back within the grace period carries on (Pi kept working); one that does
        # not has its runs ended as failed, with what Pi wrote before it went kept.
        task = asyncio.create_task(self.fail_orphans_later(self.runner.pk))
        _orphans.add(task)
        task.add_done_callback(_orphans.discard)

    @staticmethod
    async def fail_orphans_later(runner_id: int) -> None:
        await asyncio.sleep(float(settings.PIWEB_RUNNER_GRACE))
        try:
            await database_sync_to_async(services.fail_orphaned_runs)(runner_id)
        except Exception:
            log.exception("could not end the runs of runner %s", runner_id)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if self.runner is None or not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "hello":
            await database_sync_to_async(services.runner_said_hello)(self.runner, clean_info(content))
            return
        if kind == "ping":
            await self.send_json({"type": "pong"})
            return
        run_id = str(content.get("run") or "")
        if kind == "event" and run_id in self.sessions:
            # The live events of a reply come many a second: their run was looked up once.
            self.relay(self.sessions[run_id], run_id, content.get("event"))
            return
        run = await database_sync_to_async(services.run_of)(self.runner, run_id) if run_id else None
        if run is None:
            await self.send_json({"type": "refused", "run": run_id, "error": "no such run on this runner"})
            return
        self.sessions[run_id] = run.session_id
        if kind == "started":
            await database_sync_to_async(services.run_started)(run)
        elif kind == "lines":
            await self.store_lines(run, content)
        elif kind == "event":
            self.relay(run.session_id, run_id, content.get("event"))
        elif kind == "ended":
            status = str(content.get("status") or "")
            try:
                await database_sync_to_async(services.run_ended)(
                    run, status=status, error=str(content.get("error") or ""), git=content.get("git")
                )
            except ValueError as exc:
                await self.send_json({"type": "refused", "run": run_id, "error": str(exc)})
        else:
            await self.send_json({"type": "refused", "run": run_id, "error": f"unknown message {kind!r}"})

    async def store_lines(self, run: Any, content: dict[str, Any]) -> None:
        run_id = str(run.public_id)
        try:
            start, end = content["from"], content["to"]
            lines = content["lines"]
            if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
                raise ValueError("lines must be a list of strings")
            cursor = await database_sync_to_async(services.run_lines)(
                run,
                header=str(content["header"]),
                start=Cursor(int(start["lines"]), start.get("bytes"), start.get("lastId")),
                end_lines=int(end["lines"]),
                end_bytes=end.get("bytes"),
                lines=lines,
            )
        except SyncCursorMismatch as exc:
            await self.send_json(
                {"type": "refused", "run": run_id, "kind": "cursor", "cursor": exc.cursor.as_json()}
            )
            return
        except (SyncConflict, InvalidSessionFile, PermissionError) as exc:
            await self.send_json({"type": "refused", "run": run_id, "error": str(exc)})
            return
        except (KeyError, TypeError, ValueError) as exc:
            await self.send_json({"type": "refused", "run": run_id, "error": f"malformed lines: {exc}"})
            return
        await self.send_json({"type": "ack", "run": run_id, "cursor": cursor.as_json()})

    def relay(self, session_id: int, run_id: str, event: Any) -> None:
        """Pass Pi's live events on to the session's pages: the reply as it streams, each tool as it runs."""
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "message_update":
            update = event.get("assistantMessageEvent")
            if isinstance(update, dict) and update.get("type") in ("text_delta", "thinking_delta"):
                realtime.broadcast(
                    session_id,
                    "run_delta",
                    run=run_id,
                    delta=str(update.get("delta") or ""),
                    index=update.get("contentIndex"),
                    kind="text" if update["type"] == "text_delta" else "thinking",
                )
        elif kind in ("tool_execution_start", "tool_execution_update", "tool_execution_end"):
            result = event.get("result") if kind == "tool_execution_end" else event.get("partialResult")
            realtime.broadcast(
                session_id,
                "run_tool",
                run=run_id,
                phase=kind.removeprefix("tool_execution_"),
                toolCallId=str(event.get("toolCallId") or ""),
                toolName=str(event.get("toolName") or ""),
                args=event.get("args") if kind == "tool_execution_start" else None,
                output=_output_text(result)[-4000:],
                isError=bool(event.get("isError")),
            )

    async def runner_dispatch(self, message: dict[str, Any]) -> None:
        await self.send_json({**message, "type": "dispatch"})

    async def runner_command(self, message: dict[str, Any]) -> None:
        await self.send_json({**message, "type": "command"})

    async def runner_revoked(self, message: dict[str, Any]) -> None:
        await self.close(code=CLOSE_REVOKED)


def _output_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    texts = (c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return "".join(str(t or "") for t in texts)
