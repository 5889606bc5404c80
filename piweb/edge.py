"""The outer edge of the ASGI application: every request gets an answer, and one access-log line.

- A URL longer than ``MAX_URL_BYTES`` gets 414; more than ``MAX_HEADERS`` headers or ``MAX_HEADER_BYTES``
  of them gets 431 (servers that refuse such requests before the application sees them are taught the
  same answers in ``piweb.servers``).
- A body that has not arrived ``body_deadline`` seconds after its headers gets 408.
- The access log (logger ``piweb.access``) names the client per ``PIWEB_TRUSTED_PROXIES`` and the path
  with its secrets redacted and its query reduced to its keys; the servers' own access logs, which print
  raw paths, are turned off.
- Each request and socket gets a request id (``piweb.json_logs``), answered as ``X-Request-ID`` and put
  on every log record written while it is handled; open sockets are counted for the metrics.

The body cap itself (413 from the declared length) is ``piweb.limits.BodyLimitASGI``, inside this one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from core import metrics
from core.proxies import scope_client
from piweb.json_logs import REQUEST_ID, request_id_for
from piweb.log_redaction import redact

__all__ = [
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "MAX_URL_BYTES",
    "EdgeASGI",
    "body_deadline",
    "error_body",
    "log_access",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_URL_BYTES = 8 * 1024
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADERS = 100
MIB = 1024 * 1024

access_log = logging.getLogger("piweb.access")

MESSAGES = {
    408: "The request body did not arrive in time.",
    413: "The request body is too large.",
    414: f"The URL is longer than {MAX_URL_BYTES} bytes.",
    431: f"The request headers are larger than {MAX_HEADER_BYTES} bytes or more than {MAX_HEADERS}.",
}


def body_deadline(declared: int | None) -> float:
    """Seconds a body may take after its headers: ``PIWEB_BODY_TIMEOUT``, plus one per MiB declared."""
    return float(settings.PIWEB_BODY_TIMEOUT) + (declared or 0) / MIB


def error_body(path: str, status: int, message: str | None = None) -> tuple[bytes, bytes]:
    """Return the body and content type of an error answer: the API's JSON shape under /api/."""
    text = message or MESSAGES.get(status, "Bad request.")
    if path.startswith("/api/"):
        return json.dumps({"error": text}).encode(), b"application/json"
    return text.encode(), b"text/plain; charset=utf-8"


def log_access(client: str, method: str, target: str, status: int | str, size: int, started: float) -> None:
    """Write one access-log line; the target's secrets and query values are dropped here (the handler's
    filter redacts the line again)."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    elapsed = (time.monotonic() - started) * 1000
    path = redact(target)
    # The fields again, for JSON logs (piweb.json_logs): the path is the redacted one.
    fields = {"client": client, "method": method, "path": path, "status": status, "bytes": size}
    access_log.info(
        '%s "%s %s" %s %s %.0fms',
        client,
        method,
        path,
        status,
        size,
        elapsed,
        extra={**fields, "duration_ms": round(elapsed, 1)},
    )


def _target(scope: Scope) -> str:
    raw = scope.get("raw_path") or scope.get("path", "/").encode("utf-8", "surrogateescape")
    query = scope.get("query_string") or b""
    text = raw.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
    # Long targets are cut in the log; the cut part is not worth a megabyte of log.
    return text if len(text) <= 500 else text[:500] + "…"


def _oversized(scope: Scope) -> int | None:
    raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")
    if len(raw) + len(scope.get("query_string") or b"") > MAX_URL_BYTES:
        return 414
    headers = scope.get("headers", [])
    if len(headers) > MAX_HEADERS or sum(len(n) + len(v) + 4 for n, v in headers) > MAX_HEADER_BYTES:
        return 431
    return None


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _answer(send: Send, path: str, status: int) -> int:
    body, kind = error_body(path, status)
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
    return len(body)


class EdgeASGI:
    """Wrap the whole ASGI application (HTTP and websockets)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = request_id_for(scope.get("headers"))
        token = REQUEST_ID.set(request_id)
        try:
            if kind == "http":
                await self._http(scope, receive, _with_request_id(send, request_id))
            else:
                await self._websocket(scope, receive, send)
        finally:
            REQUEST_ID.reset(token)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        client = scope_client(scope)
        method, path = str(scope.get("method", "GET")), str(scope.get("path", "/"))
        refused = _oversized(scope)
        if refused is not None:
            size = await _answer(send, path, refused)
            log_access(client, method, _target(scope), refused, size, started)
            return
        status: int | str = "-"
        size = 0

        async def observed(message: Message) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = int(message["status"])
                # How long the application took to start answering (queueing in this process included):
                # browsers' tools and the bench tell it apart from the network and a busy client this way.
                spent = (time.monotonic() - started) * 1000
                headers = [
                    *(message.get("headers") or []),
                    (b"server-timing", f"app;dur={spent:.1f}".encode()),
                ]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        deadline = time.monotonic() + body_deadline(_declared_length(scope))
        body_done = False
        timed_out = False

        async def timed() -> Message:
            # Only the body has a deadline; later waits (Django listening for a disconnect) have none.
            nonlocal body_done, timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                timed_out = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        try:
            await self.app(scope, timed, observed)
            if timed_out and status == "-":
                status, size = 408, await _answer(send, path, 408)
        finally:
            log_access(client, method, _target(scope), status, size, started)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        client = scope_client(scope)
        if _oversized(scope) is not None:
            # No HTTP answer can be given to a socket handshake from here; refusing it is a 403.
            await send({"type": "websocket.close", "code": 1009})
            log_access(client, "WS", _target(scope), "refused", 0, started)
            return
        outcome = "closed"

        async def observed(message: Message) -> None:
            nonlocal outcome
            if message["type"] == "websocket.accept":
                outcome = "accepted"
                metrics.socket_opened()
                log_access(client, "WS", _target(scope), "accepted", 0, started)
            elif message["type"] == "websocket.close" and outcome != "accepted":
                outcome = f"refused {message.get('code', 1000)}"
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            if outcome == "accepted":
                metrics.socket_closed()
            else:
                log_access(client, "WS", _target(scope), outcome, 0, started)


def _with_request_id(send: Send, request_id: str) -> Send:
    """Answer the request id in the response headers (unless the application set one)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or [])
            if not any(name.lower() == b"x-request-id" for name, _ in headers):
                headers.append((b"x-request-id", request_id.encode("latin-1")))
            message = {**message, "headers": headers}
        await send(message)

    return sending
