"""Shared streaming machinery: assemble the assistant message and run one SSE request."""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from pitree.jsjson import js_stringify
from providers.llm.arguments import parse_tool_call_arguments, partial_tool_call_arguments
from providers.llm.errors import UNREADABLE_ERROR_BODY, format_http_error, transport_error_text
from providers.llm.sse import SseEvent, iter_sse
from providers.llm.types import (
    Done,
    EventSink,
    Message,
    ProviderConfig,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
)

_BLOCK_KEY = {"text": "text", "thinking": "thinking"}


def zero_usage() -> dict[str, Any]:
    """Return Pi's usage record with every counter and cost at zero."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


class StreamError(Exception):
    """The provider sent data we cannot read."""


class ProviderStreamError(StreamError):
    """The provider reported an error inside the stream; its text is what Pi stores for it."""


class AssistantBuilder:
    """Grow a Pi assistant message block by block and report each change to the sink."""

    def __init__(
        self, config: ProviderConfig, on_event: EventSink | None, *, thinking_level: str | None = None
    ) -> None:
        self._on_event = on_event or (lambda _event: None)
        self._arguments: dict[int, str] = {}
        self._cost = config.cost
        self._thinking_level = thinking_level
        self._started = time.monotonic()  # durationMs counts from the request, as Pi's does
        self.message: Message = {
            "role": "assistant",
            "content": [],
            "api": config.api,
            "provider": config.provider,
            "model": config.model_id,
            "usage": zero_usage(),
            "stopReason": "stop",
            "timestamp": int(time.time() * 1000),
        }

    @property
    def usage(self) -> dict[str, Any]:
        return self.message["usage"]

    def set_usage(self, usage: dict[str, Any]) -> None:
        self.message["usage"] = usage
        self.price()

    def price(self) -> None:
        """Total the counters and price them at the model's rates (dollars per million tokens).

        Only usage the provider reported is priced: an answer that reported none keeps the zero record
        without ``totalFromProvider``, as Pi's does.
        """
        usage, rates = self.usage, self._cost
        usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
        long_write = usage.get("cacheWrite1h") or 0
        cost = usage["cost"]
        cost["input"] = (rates.get("input", 0) / 1000000) * usage["input"]
        cost["output"] = (rates.get("output", 0) / 1000000) * usage["output"]
        cost["cacheRead"] = (rates.get("cacheRead", 0) / 1000000) * usage["cacheRead"]
        short_write = usage["cacheWrite"] - long_write
        # A one-hour cache write costs twice the input rate.
        cost["cacheWrite"] = (
            rates.get("cacheWrite", 0) * short_write + rates.get("input", 0) * 2 * long_write
        ) / 1000000
        cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
        cost["totalFromProvider"] = False

    def open_block(self, block: dict[str, Any]) -> int:
        """Append a block and return its index."""
        content = self.message["content"]
        content.append(block)
        if block["type"] == "toolCall":
            self._arguments[len(content) - 1] = ""
        return len(content) - 1

    def only(self, kind: str, **fields: Any) -> int:
        """Return the answer's one block of ``kind`` (text or thinking), opened with ``fields`` at the end
        when there is none yet."""
        content = self.message["content"]
        found = next((i for i, block in enumerate(content) if block["type"] == kind), None)
        if found is not None:
            return found
        return self.open_block({"type": kind, _BLOCK_KEY[kind]: "", **fields})

    def add_text(self, index: int, delta: str) -> None:
        self.message["content"][index]["text"] += delta
        self._on_event(TextDelta(index, delta))

    def add_thinking(self, index: int, delta: str) -> None:
        self.message["content"][index]["thinking"] += delta
        self._on_event(ThinkingDelta(index, delta))

    def add_signature(self, index: int, signature: str) -> None:
        block = self.message["content"][index]
        block["thinkingSignature"] = block.get("thinkingSignature", "") + signature

    def add_arguments(self, index: int, delta: str) -> None:
        block = self.message["content"][index]
        self._arguments[index] += delta
        self._on_event(ToolCallDelta(index, block["id"], block["name"], delta))

    def end_tool_call(self, index: int) -> None:
        """Parse the collected argument JSON; a broken payload is recorded, not raised."""
        text = self._arguments.pop(index, None)
        if text is None:
            return
        block = self.message["content"][index]
        block["arguments"], error = parse_tool_call_arguments(text)
        if error is not None:
            block["argumentsError"] = error
        self._on_event(ToolCallEnd(index, dict(block)))

    def cut_tool_calls(self) -> None:
        """Leave open tool calls as far as they streamed: the arguments their text shows so far."""
        for index, text in list(self._arguments.items()):
            self.message["content"][index]["arguments"] = partial_tool_call_arguments(text)
        self._arguments.clear()

    def finish(self, stop_reason: StopReason, error: str | None = None, *, cut: bool = False) -> Message:
        """Close open tool calls (``cut``: keep them as streamed), total the usage and emit Done."""
        if cut:
            self.cut_tool_calls()
        for index in list(self._arguments):
            self.end_tool_call(index)
        usage = self.usage
        usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
        self.message["stopReason"] = stop_reason
        if error is not None:
            self.message["errorMessage"] = error
        self.message["durationMs"] = max(0, round((time.monotonic() - self._started) * 1000))
        if self._thinking_level is not None:
            self.message["thinkingLevel"] = self._thinking_level
        self._on_event(Done(self.message))
        return self.message


class Decoder(Protocol):
    """Turns one provider's SSE events into builder calls."""

    stop_reason: StopReason | None  # set once the provider said how the turn ended
    finished: bool  # the provider's end-of-stream marker arrived
    error: str | None  # the provider's text when stop_reason is "error"
    # What Pi's client for this format stores when the user stops a reply mid-stream, and whether it
    # then finishes the tool calls (OpenAI's reads an aborted stream as ended) or keeps them as streamed.
    abort_text: str
    abort_closes_calls: bool

    def feed(self, event: SseEvent) -> None: ...

    def incomplete(self) -> str | None:
        """Pi's error text for a stream that ended cleanly before the turn did; None when it is whole."""
        ...


class _AbortWatch:
    """Shut the connection's socket when ``abort`` fires so a blocked read returns at once."""

    def __init__(self, abort: threading.Event | None) -> None:
        self._abort = abort
        self._sock: socket.socket | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            self._sock = stream.get_extra_info("socket") if stream is not None else None

    def __enter__(self) -> _AbortWatch:
        if self._abort is not None:
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        assert self._abort is not None
        # threading.Event has no callbacks, so poll; 50 ms is well under a user's reaction time.
        while not self._done.is_set():
            if self._abort.wait(0.05):
                if self._sock is not None:
                    with contextlib.suppress(OSError):
                        self._sock.shutdown(socket.SHUT_RDWR)
                return


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the TLS settings every provider request shares. Building them loads the CA bundle, which
    took a third of a runs worker's time when each request built its own (20 runs at once)."""
    return httpx.create_ssl_context()


# What Pi stores for a reply stopped before its response began: its retry wrapper's abort error, for
# both formats.
ABORTED_BEFORE_RESPONSE = "Request aborted"


def _errno(exc: BaseException) -> str | None:
    """The name of the system error under a client exception (``ECONNREFUSED``), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            return errno.errorcode.get(current.errno)
        for args in current.args:
            if isinstance(args, OSError) and args.errno is not None:
                return errno.errorcode.get(args.errno)
        current = current.__cause__ or current.__context__
    text = str(exc)
    for code, words in (("ECONNREFUSED", "Connection refused"), ("ECONNRESET", "Connection reset by peer")):
        if words in text:
            return code
    return None


def _peer(url: str) -> str:
    """``address:port`` as Node names the peer it connects to (a host name resolved to its address)."""
    parsed = httpx.URL(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = parsed.host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        with contextlib.suppress(OSError, UnicodeError):
            host = str(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0])
    return f"{host}:{port}"


def _keeps_alive(resp: httpx.Response) -> bool:
    """Whether the connection was to stay open after this response (HTTP/1.1 unless it says close)."""
    connection = resp.headers.get("connection", "").lower()
    if resp.http_version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection and _framed(resp)


def _framed(resp: httpx.Response) -> bool:
    """Whether the body has a declared end: chunked, or a length."""
    return "chunked" in resp.headers.get("transfer-encoding", "").lower() or "content-length" in resp.headers


def run_stream(
    *,
    label: str,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    decoder: Decoder,
    builder: AssistantBuilder,
    timeout: float,
    abort: threading.Event | None,
) -> Message:
    """POST ``body`` and decode the SSE reply. Provider and transport failures become error messages."""

    def aborted() -> bool:
        return abort is not None and abort.is_set()

    if aborted():
        return builder.finish("aborted", ABORTED_BEFORE_RESPONSE)
    status, keep_alive, framed = 0, False, True
    # Sent as JSON.stringify writes it: numbers parsed from a tool call (``1e3``) go out as Pi sends them.
    content = js_stringify(body).encode()
    try:
        with (
            _AbortWatch(abort) as watch,
            httpx.Client(timeout=timeout, verify=tls_context()) as client,
            client.stream(
                "POST",
                url,
                headers={**headers, "content-type": "application/json"},
                content=content,
                extensions={"trace": watch.trace},
            ) as resp,
        ):
            status, keep_alive, framed = resp.status_code, _keeps_alive(resp), _framed(resp)
            if status >= 400:
                try:
                    resp.read()
                    text = resp.text
                except (httpx.TransportError, OSError):
                    if aborted():
                        raise
                    # Pi's clients keep the reader's message in place of a body cut short.
                    text = UNREADABLE_ERROR_BODY
                return builder.finish("error", format_http_error(label, status, text))
            for event in iter_sse(resp.iter_lines()):
                if aborted():
                    break
                decoder.feed(event)
                if decoder.finished:
                    break
    except httpx.TimeoutException:
        if not aborted():
            return builder.finish("error", f"{label} request timed out after {timeout:g}s", cut=True)
    except ProviderStreamError as exc:
        if not aborted():
            return builder.finish("error", str(exc), cut=True)
    except StreamError as exc:
        if not aborted():
            return builder.finish("error", f"{label} stream error: {exc}", cut=True)
    except (httpx.HTTPError, OSError) as exc:
        if not aborted():
            failure = transport_error_text(
                label,
                type(exc).__name__,
                str(exc),
                responded=status > 0,
                errno=_errno(exc),
                peer=_peer(url),
                keep_alive=keep_alive,
                framed=framed,
            )
            if failure is not None:
                return builder.finish("error", failure, cut=True)
    if aborted():
        if status == 0:
            return builder.finish("aborted", ABORTED_BEFORE_RESPONSE)
        return builder.finish("aborted", decoder.abort_text, cut=not decoder.abort_closes_calls)
    # A body that held no events (a page, a plain JSON answer) ends like a stream cut before its end.
    if (incomplete := decoder.incomplete()) is not None:
        return builder.finish("error", incomplete, cut=not decoder.abort_closes_calls)
    if decoder.stop_reason == "error":
        return builder.finish("error", decoder.error or f"{label} reported an error")
    return builder.finish(decoder.stop_reason or "stop")
