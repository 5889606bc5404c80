"""What piweb changes in the ASGI servers the README offers (daphne, uvicorn), when one of them loads it.

Both servers import ``piweb.asgi`` before they listen, so ``adapt_servers`` runs in time. The changes
make each server answer where it would otherwise hang or drop the connection, and leave the access log
and forwarded addresses to piweb (``piweb.edge``, ``core.proxies``):

daphne (Twisted)
    Twisted reads a whole body before daphne calls the application, so the application cannot refuse
    it early. Here the channel itself answers 413 as soon as the declared ``Content-Length`` passes the
    cap, 408 when the body has not arrived by the deadline, and 414 or 431 (instead of a dropped
    connection or a bare 400) when the request line or the headers pass Twisted's 16 KiB limits.
    daphne's own access log, which prints raw paths, is turned off.
uvicorn (h11)
    Headers past h11's buffer get 414 or 431 instead of 400; uvicorn's own access log and its
    ``X-Forwarded-For`` rewriting (which trusts any proxy on 127.0.0.1) are turned off.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any
from urllib.parse import unquote

__all__ = ["adapt_servers"]

REASONS = {
    400: b"Bad Request",
    408: b"Request Timeout",
    413: b"Content Too Large",
    414: b"URI Too Long",
    431: b"Request Header Fields Too Large",
}


def _raw_answer(path: str, status: int, message: str | None = None) -> bytes:
    from piweb.edge import error_body

    body, kind = error_body(path, status, message)
    head = (
        f"HTTP/1.1 {status} {REASONS[status].decode()}\r\nContent-Type: {kind.decode()}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


def adapt_servers() -> None:
    """Adapt whichever of the offered servers has been imported into this process."""
    if "daphne.server" in sys.modules:
        _adapt_daphne()
    if "uvicorn.config" in sys.modules or "uvicorn.main" in sys.modules:
        _adapt_uvicorn()


# -- daphne ---------------------------------------------------------------------------------------------


def _adapt_daphne() -> None:
    from daphne.server import Server
    from twisted.internet import reactor
    from twisted.web.http import HTTPChannel

    from core.proxies import client_address
    from piweb.edge import MAX_HEADERS, body_deadline, log_access
    from piweb.limits import body_limit_for, too_large_message

    if getattr(HTTPChannel, "_piweb_adapted", False):
        return
    HTTPChannel._piweb_adapted = True  # type: ignore[attr-defined]
    original_log_action = Server.log_action

    def log_action(self: Any, protocol: str, action: str, details: dict[str, Any]) -> None:
        # piweb writes its own access log (piweb.edge); daphne's would print raw paths.
        if protocol in ("http", "websocket"):
            return
        original_log_action(self, protocol, action, details)

    Server.log_action = log_action  # type: ignore[method-assign]
    HTTPChannel.maxHeaders = MAX_HEADERS

    original_line = HTTPChannel.lineReceived
    original_headers = HTTPChannel.allHeadersReceived
    original_content = HTTPChannel.allContentReceived
    original_lost = HTTPChannel.connectionLost

    def first_line_pending(channel: Any) -> bool:
        return bool(channel._HTTPChannel__first_line)

    def path_of(channel: Any) -> str:
        raw = getattr(channel, "_path", b"/") or b"/"
        return unquote(raw.split(b"?", 1)[0].decode("latin-1"))

    def refuse(channel: Any, status: int, message: str | None = None) -> None:
        """Answer at once and stop reading: the rest of the request is never processed."""
        if getattr(channel, "_piweb_refused", False):
            return
        channel._piweb_refused = True
        cancel_deadline(channel)
        pending = first_line_pending(channel)
        path = "/" if pending else path_of(channel)
        body = _raw_answer(path, status, message)
        peer = channel.transport.getPeer() if channel.transport else None
        forwarded = None
        if channel.requests:
            values = channel.requests[-1].requestHeaders.getRawHeaders(b"x-forwarded-for") or []
            forwarded = ",".join(v.decode("latin-1") for v in values) or None
        client = client_address(getattr(peer, "host", ""), forwarded)
        method = "-" if pending else channel._command.decode("latin-1")
        target = "-" if pending else channel._path.decode("latin-1")[:500]
        log_access(
            client, method, target, status, len(body), getattr(channel, "_piweb_started", time.monotonic())
        )
        ignore = lambda *args: None  # noqa: E731
        channel.lineReceived = channel.rawDataReceived = ignore
        channel.allContentReceived = ignore
        if channel.transport is not None:
            channel.transport.write(body)
            channel.loseConnection()

    def cancel_deadline(channel: Any) -> None:
        call = getattr(channel, "_piweb_deadline", None)
        if call is not None and call.active():
            call.cancel()
        channel._piweb_deadline = None

    def lineLengthExceeded(self: Any, line: bytes) -> None:
        refuse(self, 414 if first_line_pending(self) else 431)

    def lineReceived(self: Any, line: bytes) -> None:
        if first_line_pending(self):
            self._piweb_started = time.monotonic()
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            refuse(self, 414 if first_line_pending(self) else 431)
            return
        if not first_line_pending(self):
            # Headers so far: those parsed, the one held back for continuation lines, and this one.
            count = self._receivedHeaderCount + (1 if self._HTTPChannel__header else 0)
            count += 1 if line and line[:1] not in b" \t" else 0
            if count > self.maxHeaders:
                refuse(self, 431)
                return
        original_line(self, line)

    def allHeadersReceived(self: Any) -> None:
        original_headers(self)
        if getattr(self, "_piweb_refused", False):
            return
        declared = self.length
        if declared:
            limit = body_limit_for(path_of(self))
            if declared > limit:
                refuse(self, 413, too_large_message(limit))
                return
        if declared != 0:  # a body follows (None: chunked)
            # The stubs read callLater off the interface, where it has no self: the delay is first.
            self._piweb_deadline = reactor.callLater(body_deadline(declared), refuse, self, 408)  # type: ignore[arg-type]

    def allContentReceived(self: Any) -> None:
        cancel_deadline(self)
        original_content(self)

    def connectionLost(self: Any, reason: Any) -> None:
        cancel_deadline(self)
        original_lost(self, reason)

    HTTPChannel.lineLengthExceeded = lineLengthExceeded  # type: ignore[method-assign]
    HTTPChannel.lineReceived = lineReceived  # type: ignore[method-assign]
    HTTPChannel.allHeadersReceived = allHeadersReceived  # type: ignore[method-assign]
    HTTPChannel.allContentReceived = allContentReceived  # type: ignore[method-assign]
    HTTPChannel.connectionLost = connectionLost  # type: ignore[method-assign]


# -- uvicorn --------------------------------------------------------------------------------------------


def _adapt_uvicorn() -> None:
    import uvicorn.config
    from uvicorn.protocols.http import h11_impl

    # piweb.edge writes the access log and core.proxies decides forwarded addresses.
    access = logging.getLogger("uvicorn.access")
    access.handlers.clear()
    access.propagate = False
    access.disabled = True
    uvicorn.config.ProxyHeadersMiddleware = lambda app, trusted_hosts=None: app  # type: ignore[assignment,misc,return-value]

    # uvicorn logs socket handshakes (path and query) on its error logger: redact those lines too.
    from piweb.log_redaction import RedactSecretsFilter

    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        for target in [logger, *logger.handlers]:
            if not any(isinstance(f, RedactSecretsFilter) for f in target.filters):
                target.addFilter(RedactSecretsFilter())

    protocol = h11_impl.H11Protocol
    if getattr(protocol, "_piweb_adapted", False):
        return
    protocol._piweb_adapted = True  # type: ignore[attr-defined]
    original_send_400 = protocol.send_400_response
    original_upgrade = protocol.handle_websocket_upgrade

    def handle_websocket_upgrade(self: Any, event: Any) -> None:
        # The websocket protocol drops a handshake past its own line limits without a word.
        from piweb.edge import MAX_HEADER_BYTES, MAX_HEADERS, MAX_URL_BYTES

        status = None
        if len(event.target) > MAX_URL_BYTES:
            status = 414
        elif (
            len(self.headers) > MAX_HEADERS
            or sum(len(n) + len(v) + 4 for n, v in self.headers) > MAX_HEADER_BYTES
        ):
            status = 431
        if status is None:
            original_upgrade(self, event)
            return
        self.transport.write(_raw_answer("/", status))
        self.transport.close()

    def send_400_response(self: Any, msg: str) -> None:
        data, _closed = self.conn.trailing_data
        # h11 gives up on a head larger than its buffer: say which part was too long.
        if len(data) >= self.conn._max_incomplete_event_size:
            status = 414 if b"\r\n" not in data else 431
            self.transport.write(_raw_answer("/", status))
            self.transport.close()
            return
        original_send_400(self, msg)

    protocol.send_400_response = send_400_response  # type: ignore[method-assign]
    protocol.handle_websocket_upgrade = handle_websocket_upgrade  # type: ignore[method-assign]
