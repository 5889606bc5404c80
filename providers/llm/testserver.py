"""A scriptable stand-in for the OpenAI and Anthropic streaming endpoints, bound to loopback.

Each POST to ``/v1/chat/completions`` or ``/v1/messages`` takes the next scripted response from a queue
and plays it in that endpoint's wire format; every request is recorded so tests can check what was sent.
Scripts are plain JSON-able dicts built by the functions below, so the same script runs in-process or
from a file: ``python -m providers.llm.testserver --port 8765 --script script.json``. While running
standalone, ``POST /_script`` (a JSON list) appends responses and ``GET /_requests`` lists the record.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import signal
import socket
import struct
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Spec = dict[str, Any]
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


# --- script builders ---------------------------------------------------------------------------------


def reply(
    text: str = "Hello.",
    *,
    thinking: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    usage: Mapping[str, int] | None = None,
    stop: str | None = None,
    delay: float = 0.0,
    reasoning_field: str = "reasoning_content",
    reasoning_details: Sequence[Mapping[str, Any]] = (),
    redacted: str | None = None,
    resumed: Sequence[tuple[str, str]] = (),
) -> Spec:
    """A streamed turn. ``usage`` takes Pi names (input, output, cacheRead, cacheWrite); ``stop`` Pi's.

    ``resumed`` follows the text: ``("thinking", …)`` or ``("text", …)`` pairs, as a model that thinks
    again after it began answering sends them (OpenAI-compatible: more deltas of the same fields;
    Anthropic: new blocks).

    OpenAI-compatible only: ``thinking`` streams in ``reasoning_field``, and ``reasoning_details`` follow
    one per chunk (as OpenRouter sends encrypted reasoning). Anthropic only: ``redacted`` is the data of
    a ``redacted_thinking`` block sent before the rest.
    """
    return {
        "kind": "reply",
        "text": text,
        "thinking": thinking,
        "reasoning_field": reasoning_field,
        "reasoning_details": [dict(d) for d in reasoning_details],
        "redacted": redacted,
        "resumed": [[kind, text] for kind, text in resumed],
        "tool_calls": [dict(c) for c in tool_calls],
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, **(usage or {})},
        "stop": stop or ("toolUse" if tool_calls else "stop"),
        "delay": delay,  # seconds between events
    }


def tool_call(name: str, arguments: Mapping[str, Any], *, id: str = "call_1", text: str = "") -> Spec:
    """A turn that ends by calling one tool."""
    return reply(text, tool_calls=[{"id": id, "name": name, "arguments": dict(arguments)}])


def dropped(after: int = 3, **kwargs: Any) -> Spec:
    """A turn whose connection is cut after ``after`` events (0: before any response)."""
    return {**reply(**kwargs), "fault": {"type": "drop", "after": after}}


def hang(seconds: float, after: int = 0, **kwargs: Any) -> Spec:
    """A turn that stalls for ``seconds`` after ``after`` events (0: before the status line)."""
    return {**reply(**kwargs), "fault": {"type": "hang", "after": after, "seconds": seconds}}


def reset(after: int = 3, *, keep_alive: bool = False, **kwargs: Any) -> Spec:
    """A turn whose connection is reset (TCP RST) after ``after`` events (0: before any response).
    ``keep_alive``: the response does not say it closes the connection."""
    return {**reply(**kwargs), "fault": {"type": "reset", "after": after, "keep_alive": keep_alive}}


def injected(event: str, after: int = 3, **kwargs: Any) -> Spec:
    """A turn with the raw SSE text ``event`` (e.g. ``"data: {oops\\n\\n"``) slipped in after ``after``
    events; the rest of the turn follows as usual."""
    return {**reply(**kwargs), "fault": {"type": "inject", "after": after, "event": event}}


def stream_error(message: str = "Overloaded", *, type: str = "overloaded_error", after: int = 3) -> Spec:
    """A turn that starts streaming, then reports an error event after ``after`` events."""
    return {
        **reply("partial answer that never ends"),
        "fault": {"type": "error", "after": after, "error": {"type": type, "message": message}},
    }


def error(status: int, message: str, *, type: str = "api_error", code: str | None = None) -> Spec:
    """An HTTP error in the endpoint's own error envelope."""
    return {"kind": "error", "status": status, "message": message, "type": type, "code": code}


def overflow(tokens: int = 213462, window: int = 200000) -> Spec:
    """The provider's own 400 for a prompt larger than the context window."""
    return {"kind": "overflow", "tokens": tokens, "window": window}


def too_large() -> Spec:
    return error(413, "Request exceeds the maximum allowed number of bytes.", type="request_too_large")


def rate_limited() -> Spec:
    return error(429, "Rate limit reached: too many requests per minute.", type="rate_limit_error")


def overloaded() -> Spec:
    return error(529, "Overloaded", type="overloaded_error")


def server_error() -> Spec:
    return error(500, "Internal server error", type="api_error")


def garbage(body: str = "<html><body>502 Bad Gateway</body></html>", *, status: int = 200) -> Spec:
    """A response (a 200 by default) whose body is not an event stream."""
    return {"kind": "garbage", "body": body, "status": status}


def cut_error(status: int, message: str, *, type: str = "api_error", sent: int = 20) -> Spec:
    """An HTTP error whose declared body length is never reached: ``sent`` bytes, then the connection
    closes."""
    return {**error(status, message, type=type), "kind": "cut", "sent": sent}


# --- wire rendering ----------------------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text) or ([text] if text else [])


def _json_pieces(call: Mapping[str, Any]) -> list[str]:
    """A call's argument text in pieces: its ``arguments_json`` as written, else its arguments as JSON."""
    text = call.get("arguments_json") or json.dumps(call["arguments"])
    return [text[i : i + 12] for i in range(0, len(text), 12)]


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def render_openai(spec: Spec, body: Mapping[str, Any]) -> list[bytes]:
    """Return the chat.completion.chunk events for a scripted reply."""
    model = body.get("model", "test-model")

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(
            {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model, "choices": [choice]}
        )

    events = [chunk({"role": "assistant", "content": ""})]
    field = spec.get("reasoning_field") or "reasoning_content"
    events += [chunk({field: p}) for p in _pieces(spec["thinking"] or "")]
    events += [chunk({"reasoning_details": [d]}) for d in spec.get("reasoning_details") or ()]
    events += [chunk({"content": p}) for p in _pieces(spec["text"])]
    for kind, text in spec.get("resumed") or ():
        events += [chunk({field if kind == "thinking" else "content": p}) for p in _pieces(text)]
    for i, call in enumerate(spec["tool_calls"]):
        function = {"name": call["name"], "arguments": ""}
        events.append(
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": function}]})
        )
        for p in _json_pieces(call):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
    finish = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}.get(spec["stop"], spec["stop"])
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        u = spec["usage"]
        usage = {
            "prompt_tokens": u["input"] + u["cacheRead"],
            "completion_tokens": u["output"],
            "total_tokens": u["input"] + u["cacheRead"] + u["output"],
            "prompt_tokens_details": {"cached_tokens": u["cacheRead"]},
        }
        events.append(
            _sse({"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        )
    events.append(_sse("[DONE]"))
    return events


def render_anthropic(spec: Spec, body: Mapping[str, Any]) -> list[bytes]:
    """Return the Messages stream events for a scripted reply."""
    u = spec["usage"]
    start_usage = {
        "input_tokens": u["input"],
        "output_tokens": 1,
        "cache_read_input_tokens": u["cacheRead"],
        "cache_creation_input_tokens": u["cacheWrite"],
    }
    message = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "test-model"),
        "content": [],
        "stop_reason": None,
        "usage": start_usage,
    }
    events = [
        _sse({"type": "message_start", "message": message}, "message_start"),
        _sse({"type": "ping"}, "ping"),
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if spec.get("redacted"):
        blocks.append(({"type": "redacted_thinking", "data": spec["redacted"]}, []))
    if spec["thinking"]:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(spec["thinking"])]
        blocks.append(
            ({"type": "thinking", "thinking": ""}, [*deltas, {"type": "signature_delta", "signature": "sig"}])
        )
    if spec["text"]:
        blocks.append(
            ({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(spec["text"])])
        )
    for kind, text in spec.get("resumed") or ():
        if kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(text)]
            deltas.append({"type": "signature_delta", "signature": "sig"})
            blocks.append(({"type": "thinking", "thinking": ""}, deltas))
        else:
            blocks.append(
                ({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(text)])
            )
    for call in spec["tool_calls"]:
        start = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        blocks.append(
            (
                start,
                [{"type": "input_json_delta", "partial_json": p} for p in _json_pieces(call)],
            )
        )
    for index, (start, deltas) in enumerate(blocks):
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": start}, "content_block_start"
            )
        )
        for delta in deltas:
            events.append(
                _sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    stop = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}.get(spec["stop"], spec["stop"])
    ending: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": u["output"]},
    }
    events += [_sse(ending, "message_delta"), _sse({"type": "message_stop"}, "message_stop")]
    return events


def error_body(spec: Spec, anthropic: bool) -> tuple[int, dict[str, Any]]:
    """Return status and JSON body for an error or overflow spec."""
    if spec["kind"] == "overflow":
        if anthropic:
            text = f"prompt is too long: {spec['tokens']} tokens > {spec['window']} maximum"
            spec = error(400, text, type="invalid_request_error")
        else:
            text = (
                f"This model's maximum context length is {spec['window']} tokens. However, your messages "
                f"resulted in {spec['tokens']} tokens. Please reduce the length of the messages."
            )
            spec = error(400, text, type="invalid_request_error", code="context_length_exceeded")
    if anthropic:
        return spec["status"], {"type": "error", "error": {"type": spec["type"], "message": spec["message"]}}
    code = spec.get("code") or spec["type"]
    return spec["status"], {
        "error": {"message": spec["message"], "type": spec["type"], "param": None, "code": code}
    }


# --- server ------------------------------------------------------------------------------------------


def _system_prompt(body: Any) -> str:
    """The system prompt of a request in either wire format ("" when there is none)."""
    if not isinstance(body, Mapping):
        return ""
    system = body.get("system")
    if isinstance(system, list) and system and isinstance(system[0], Mapping):
        return str(system[0].get("text") or "")
    if isinstance(system, str):
        return system
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], Mapping) else {}
    if first.get("role") in ("system", "developer") and isinstance(first.get("content"), str):
        return first["content"]
    return ""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # names lowercased
    body: Any  # parsed JSON, or the raw text when it is not JSON
    raw: str = ""  # the body as sent (how its numbers are spelled)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/_requests":
            self._send_json(200, [asdict(r) for r in self.server.owner.requests])
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode("utf-8", "replace")
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        owner = self.server.owner
        if self.path == "/_script":
            owner.enqueue(*body)
            self._send_json(200, {"queued": len(body)})
            return
        route = self.path.split("?", 1)[0]  # Pi's Anthropic client adds ``?beta=true``
        if route not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send_json(404, {"error": {"message": f"unknown path {self.path}"}})
            return
        owner.record(
            RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        )
        spec = owner.next_response(body)
        # The client may have given up (timeout or abort); then there is no one left to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._play(spec, body if isinstance(body, dict) else {}, anthropic=route == ANTHROPIC_PATH)
        self.close_connection = True

    def _play(self, spec: Spec | None, body: Mapping[str, Any], *, anthropic: bool) -> None:
        if spec is None:
            status, payload = error_body(error(500, "test server: no scripted response left"), anthropic)
            self._send_json(status, payload)
        elif spec["kind"] in ("error", "overflow"):
            status, payload = error_body(spec, anthropic)
            extra = {"retry-after": "1"} if status == 429 else {}
            self._send_json(status, payload, extra)
        elif spec["kind"] == "garbage":
            self._send_bytes(spec.get("status", 200), "text/html", spec["body"].encode())
        elif spec["kind"] == "cut":
            _status, payload = error_body(spec, anthropic)
            data = json.dumps(payload).encode()
            self.send_response(spec["status"])
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: spec["sent"]])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._stream(spec, (render_anthropic if anthropic else render_openai)(spec, body), anthropic)

    def _stream(self, spec: Spec, events: list[bytes], anthropic: bool) -> None:
        fault = spec.get("fault") or {}
        stop = self.server.owner.stopping
        for position in range(len(events) + 1):
            if fault.get("after") == position and fault["type"] == "hang":
                self.wfile.flush()
                self.server.owner.stalled.set()
                stop.wait(fault["seconds"])
            if fault.get("after") == position and fault["type"] == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault.get("after") == position and fault["type"] == "reset":
                self.wfile.flush()
                # Closing with a zero linger time sends RST instead of FIN; the socket's files go first, or
                # they would hold it open until the handler's own shutdown sends a FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.rfile.close()
                self.wfile.close()
                self.connection.close()
                self.rfile, self.wfile = io.BytesIO(), io.BytesIO()  # what the handler flushes when done
                return
            if position == 0:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                if not fault.get("keep_alive"):
                    self.send_header("connection", "close")
                self.end_headers()
            if position == len(events):
                break
            if fault.get("after") == position and fault["type"] == "inject":
                event = fault["event"].encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            if fault.get("after") == position and fault["type"] == "error":
                payload = (
                    {"type": "error", "error": fault["error"]} if anthropic else {"error": fault["error"]}
                )
                event = _sse(payload, "error" if anthropic else None)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                break
            if spec.get("delay") and position:
                stop.wait(spec["delay"])
            event = events[position]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, "application/json", json.dumps(payload).encode(), headers)

    def _send_bytes(
        self, status: int, kind: str, data: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: ProviderServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)


class ProviderServer:
    """The scripted server; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        script: Iterable[Spec] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        side_prompts: Sequence[str] = (),
    ) -> None:
        """``side_prompts``: requests whose system prompt starts with one of these take their answers
        from a second queue (``enqueue_side``), so summaries need not be counted into the main script."""
        self._queue: deque[Spec] = deque(script)
        self._side: deque[Spec] = deque()
        self._side_prompts = tuple(side_prompts)
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # wakes stalled handlers on stop
        self.stalled = threading.Event()  # set when a scripted hang begins (what came before it is sent)
        self._httpd = _HTTPServer((host, port), self)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def enqueue(self, *responses: Spec) -> None:
        with self._lock:
            self._queue.extend(responses)

    def enqueue_side(self, *responses: Spec) -> None:
        with self._lock:
            self._side.extend(responses)

    def next_response(self, body: Any = None) -> Spec | None:
        with self._lock:
            queue = (
                self._side
                if self._side_prompts and _system_prompt(body).startswith(self._side_prompts)
                else self._queue
            )
            return queue.popleft() if queue else None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def start(self) -> Self:
        # A short poll interval keeps stop() (and so each test's teardown) quick.
        serve = lambda: self._httpd.serve_forever(poll_interval=0.05)  # noqa: E731
        self._thread = threading.Thread(target=serve, name="provider-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    @contextlib.contextmanager
    def refusing(self) -> Iterator[None]:
        """Stop listening for the duration, so connections are refused; then listen again on the same
        port."""
        address = self._httpd.server_address[:2]
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        try:
            yield
        finally:
            self._httpd = _HTTPServer((str(address[0]), int(address[1])), self)
            self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a script file until interrupted; print the base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", help="JSON file holding a list of scripted responses")
    args = parser.parse_args(argv)
    script: list[Spec] = []
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            script = json.load(fh)
    server = ProviderServer(script, host=args.host, port=args.port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with server:
        print(f"listening on {server.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait()
    sys.exit(0)


if __name__ == "__main__":
    main()
