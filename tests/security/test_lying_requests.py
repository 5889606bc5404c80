"""Slow or lying requests get an answer, from every server the README offers, over raw sockets.

- a declared ``Content-Length`` past the cap: 413 at once, before any of the body is sent;
- a body slower than ``PIWEB_BODY_TIMEOUT`` (the suite's servers use 1.5 s): 408 soon after it;
- a URL or headers past the caps: 414 or 431, never a dropped connection.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass

import pytest

from piweb.edge import MAX_HEADER_BYTES, MAX_HEADERS, MAX_URL_BYTES

from .conftest import BODY_TIMEOUT, SERVERS, Stack

HOST = b"Host: 127.0.0.1\r\n"


@dataclass(frozen=True, slots=True)
class Lie:
    name: str
    request: bytes
    status: int
    within: float  # seconds the answer may take
    trickle: bytes = b""  # sent a byte at a time after the request, while waiting


def _post(path: str, length: int, body: bytes = b"{}") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
    return head.encode() + HOST + b"\r\n" + body


LIES = [
    Lie("declared length past the cap", _post("/api/token/", 99_999_999_999), 413, 2.0),
    Lie("declared length past the cap on a page", _post("/accounts/login/", 10**9), 413, 2.0),
    Lie("declared length past the import cap", _post("/api/sessions/import/", 10**12), 413, 2.0),
    Lie("declared length just past the cap", _post("/api/sessions/", 8 * 1024 * 1024 + 1), 413, 2.0),
    Lie("body that never comes", _post("/api/token/", 100), 408, BODY_TIMEOUT + 2.5),
    Lie("body a byte at a time", _post("/api/token/", 400, b""), 408, BODY_TIMEOUT + 2.5, trickle=b" " * 300),
    Lie(
        "chunked body that never ends",
        b"POST /api/token/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n" + HOST + b"\r\n2\r\n{}\r\n",
        408,
        BODY_TIMEOUT + 2.5,
    ),
    Lie("URL of 20 KB", b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 414, 2.0),
    Lie(
        "query of 10 KB", b"GET /api/search/?q=" + b"a" * 10_000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 414, 2.0
    ),
    Lie("URL of 200 KB", b"GET /s/" + b"a" * 200_000 + b"/ HTTP/1.1\r\n" + HOST + b"\r\n", 414, 2.0),
    Lie(
        "one header of 20 KB",
        b"GET / HTTP/1.1\r\n" + HOST + b"X-Big: " + b"a" * 20_000 + b"\r\n\r\n",
        431,
        2.0,
    ),
    Lie(
        "headers of 40 KB in all",
        b"GET / HTTP/1.1\r\n"
        + HOST
        + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 900) for i in range(45))
        + b"\r\n",
        431,
        2.0,
    ),
    Lie(
        f"more than {MAX_HEADERS} headers",
        b"GET / HTTP/1.1\r\n"
        + HOST
        + b"".join(b"X-H%d: v\r\n" % i for i in range(MAX_HEADERS + 50))
        + b"\r\n",
        431,
        2.0,
    ),
    Lie(
        "cookie of 30 KB",
        b"GET / HTTP/1.1\r\n" + HOST + b"Cookie: a=" + b"b" * 30_000 + b"\r\n\r\n",
        431,
        2.0,
    ),
    Lie(
        "socket handshake with a URL of 20 KB",
        b"GET /ws/sessions/1/?x="
        + b"a" * 20_000
        + b" HTTP/1.1\r\n"
        + HOST
        + b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        + b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        414,
        2.0,
    ),
]
assert MAX_URL_BYTES < 10_000 and MAX_HEADER_BYTES < 20_000  # the cases above pass the caps


def exchange(port: int, lie: Lie) -> tuple[bytes, float]:
    """Send the request, trickling the rest, and return what came back (until close) and when."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=lie.within + 5) as sock:
        # The server may answer and close before it has read everything.
        with contextlib.suppress(OSError):
            sock.sendall(lie.request)
        sock.settimeout(0.2 if lie.trickle else lie.within + 5)
        pending = list(lie.trickle)
        elapsed = 0.0
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                if pending:
                    try:
                        sock.sendall(bytes([pending.pop(0)]))
                    except OSError:
                        pending = []
                    continue
                if answer:
                    break
                if time.monotonic() - started > lie.within + 5:
                    break
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            if not answer:
                elapsed = time.monotonic() - started
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
    return answer, elapsed


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("lie", LIES, ids=lambda lie: lie.name)
def test_a_lying_request_gets_an_answer(stack: Stack, server: str, lie: Lie) -> None:
    answer, elapsed = exchange(stack.servers[server].port, lie)
    assert answer, f"{server}: the connection was dropped with no answer"
    status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
    assert status_line.split(" ")[1] == str(lie.status), f"{server}: {status_line}"
    assert elapsed <= lie.within, f"{server}: the answer took {elapsed:.1f}s"
    if lie.status == 408:
        assert elapsed >= BODY_TIMEOUT - 0.2, f"{server}: 408 before the deadline ({elapsed:.1f}s)"


@pytest.mark.parametrize("server", SERVERS)
def test_a_slow_body_within_the_deadline_is_served(stack: Stack, server: str) -> None:
    """The deadline is for the whole body: a client that sends it in time is answered normally."""
    body = b'{"username": "nobody", "password": "wrong"}'
    lie = Lie(
        "slow but in time", _post("/api/token/", len(body), b""), 400, BODY_TIMEOUT + 3, trickle=body[:0]
    )
    with socket.create_connection(("127.0.0.1", stack.servers[server].port), timeout=10) as sock:
        sock.sendall(lie.request)
        time.sleep(BODY_TIMEOUT / 3)
        sock.sendall(body[:10])
        time.sleep(BODY_TIMEOUT / 3)
        sock.sendall(body[10:])
        answer = sock.recv(65536)
    stack.forget_throttles()
    assert answer.split(b"\r\n", 1)[0].split(b" ")[1] in (b"400", b"401", b"403"), answer[:200]
