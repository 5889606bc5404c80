"""HTTP requests served by Django's WSGI handler on a bounded pool of threads, inside the ASGI server.

Django's ASGI handler runs a sync view behind a chain of middleware that is part sync, part async, so one
request crossed between the server's event loop and a thread of its own about six times, and every
request started a new thread. When a team opened its sessions at once (and 200 sockets joined), those
crossings queued behind each other on the loop and the GIL, and cost CPU of their own: the first
seconds' requests took over a second. Here a request crosses once (its body is read on the loop, the whole
request then runs in a pool thread, as under a WSGI server), and at most ``threads`` of them run at a
time, as many as a process has database connections.

Sockets stay with Channels; the edge (access log, body deadline, request id) and the body cap stay outside.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import Any

__all__ = ["ThreadedWSGI", "wsgi_environ"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

SPOOL_BYTES = 1024 * 1024  # a bigger body goes to a temporary file, as Django's ASGI handler does
FLUSH_BYTES = 64 * 1024  # a streamed answer is sent in pieces of about this size


def wsgi_environ(scope: Scope, body: Any) -> dict[str, Any]:
    """Return the WSGI environ of an ASGI HTTP scope (the META Django's ASGI request would have had)."""
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode("utf-8").decode("latin-1"),
        # WSGI carries the path's UTF-8 bytes as latin-1 text; Django decodes them back.
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": bytes(scope.get("query_string") or b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_HOST": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", []):
        name = bytes(raw_name).decode("latin-1").upper().replace("-", "_")
        value = bytes(raw_value).decode("latin-1")
        key = name if name in ("CONTENT_LENGTH", "CONTENT_TYPE") else f"HTTP_{name}"
        if key in environ:
            # Repeated headers are joined as Django's ASGI request joins them.
            value = f"{environ[key]},{value}"
        environ[key] = value
    return environ


class ThreadedWSGI:
    """An ASGI application for HTTP that runs a WSGI application on ``threads`` pool threads."""

    def __init__(self, app: WSGIApp, *, threads: int) -> None:
        self.app = app
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError("ThreadedWSGI serves HTTP only")
        body: Any = SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+b")  # noqa: SIM115  # closed below
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the client left (or the edge's body deadline passed): nothing to answer
                body.write(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            body.seek(0)
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()  # the request id and the like, as sync_to_async would
            start, rest = await loop.run_in_executor(
                self.pool, context.run, self._respond, wsgi_environ(scope, body), send, loop
            )
            if start is not None:
                await send(start)
            await send({"type": "http.response.body", "body": rest, "more_body": False})
        finally:
            body.close()

    def _respond(
        self, environ: dict[str, Any], send: Send, loop: asyncio.AbstractEventLoop
    ) -> tuple[Message | None, bytes]:
        """Run the request in this pool thread. Return the answer's start (None when already sent) and its
        last bytes: a whole answer crosses back to the loop once; a long one is sent as it is produced."""
        head: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            head["start"] = {
                "type": "http.response.start",
                "status": int(status.split(" ", 1)[0]),
                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            }

        async def sending(message: Message) -> None:
            await send(message)

        def emit(message: Message) -> None:
            asyncio.run_coroutine_threadsafe(sending(message), loop).result()

        result = self.app(environ, start_response)
        pending: list[bytes] = []
        size = 0
        started = False
        try:
            for chunk in result:
                if not chunk:
                    continue
                pending.append(chunk)
                size += len(chunk)
                if size >= FLUSH_BYTES:
                    if not started:
                        emit(head["start"])
                        started = True
                    emit({"type": "http.response.body", "body": b"".join(pending), "more_body": True})
                    pending, size = [], 0
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished: the thread's database connection goes back here
        return (None if started else head["start"]), b"".join(pending)
