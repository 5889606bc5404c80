"""HTTP through ``piweb.threaded_wsgi``: what a WSGI application sees of an ASGI request, and what the
client gets back, for whole answers, streamed ones and clients that leave."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest

from piweb.threaded_wsgi import FLUSH_BYTES, ThreadedWSGI

TAG: contextvars.ContextVar[str] = contextvars.ContextVar("TAG", default="")


def scope(**extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": "/sessions/é/",
        "raw_path": b"/sessions/%C3%A9/",
        "query_string": b"leaf=a1&limit=12",
        "root_path": "",
        "server": ("piweb.example", 8443),
        "client": ("10.1.2.3", 51000),
        "headers": [
            (b"host", b"piweb.example"),
            (b"content-type", b"application/json"),
            (b"content-length", b"11"),
            (b"accept", b"text/html"),
            (b"accept", b"application/json"),
        ],
        **extra,
    }


def serve(app: Any, request: dict[str, Any], bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Call the ASGI app once with ``bodies`` as what the client sends; return what it answered."""
    sent: list[dict[str, Any]] = []
    incoming = list(bodies)

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.sleep(3600)  # a client that says nothing more
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def main() -> None:
        TAG.set("request-7")
        await app(request, receive, send)

    asyncio.run(main())
    return sent


def test_the_wsgi_application_sees_the_request_as_djangos_asgi_request_would() -> None:
    seen: dict[str, Any] = {}

    def wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.update(environ)
        seen["body"] = environ["wsgi.input"].read()
        seen["thread"] = threading.current_thread().name
        seen["tag"] = TAG.get()
        start_response("201 Created", [("Content-Type", "text/plain"), ("X-Thing", "1")])
        return [b"made"]

    sent = serve(
        ThreadedWSGI(wsgi, threads=2),
        scope(),
        [
            {"type": "http.request", "body": b'{"a":', "more_body": True},
            {"type": "http.request", "body": b' "b"}x', "more_body": False},
        ],
    )
    assert seen["REQUEST_METHOD"] == "POST"
    assert seen["PATH_INFO"].encode("latin-1").decode("utf-8") == "/sessions/é/"
    assert seen["QUERY_STRING"] == "leaf=a1&limit=12"
    assert (seen["SERVER_NAME"], seen["SERVER_PORT"]) == ("piweb.example", "8443")
    assert seen["REMOTE_ADDR"] == "10.1.2.3"
    assert seen["wsgi.url_scheme"] == "https"
    assert seen["CONTENT_TYPE"] == "application/json"
    assert seen["CONTENT_LENGTH"] == "11"
    assert seen["HTTP_ACCEPT"] == "text/html,application/json"
    assert seen["body"] == b'{"a": "b"}x'
    assert seen["thread"].startswith("http")
    assert seen["tag"] == "request-7"  # the request's context (its id in the logs) goes along
    assert sent[0]["status"] == 201
    assert (b"x-thing", b"1") in sent[0]["headers"]
    assert sent[1:] == [{"type": "http.response.body", "body": b"made", "more_body": False}]


def test_a_long_answer_is_sent_while_it_is_produced_and_the_response_is_closed() -> None:
    closed: list[bool] = []
    piece = b"x" * (FLUSH_BYTES // 2 + 1)

    class Answer:
        def __iter__(self) -> Iterator[bytes]:
            yield from (piece, b"", piece, piece, b"end")

        def close(self) -> None:
            closed.append(True)

    def wsgi(environ: dict[str, Any], start_response: Any) -> Answer:
        start_response("200 OK", [("Content-Type", "application/x-ndjson")])
        return Answer()

    sent = serve(ThreadedWSGI(wsgi, threads=1), scope(method="GET"), [{"type": "http.request"}])
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    bodies = sent[1:]
    assert len(bodies) == 2, "the first two pieces go out before the rest is made"
    assert [m["more_body"] for m in bodies] == [True, False]
    assert b"".join(m["body"] for m in bodies) == piece * 3 + b"end"
    assert closed == [True]


def test_a_client_that_leaves_before_its_body_arrives_gets_nothing_and_runs_nothing() -> None:
    calls: list[str] = []

    def wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append(environ["PATH_INFO"])
        start_response("200 OK", [])
        return [b""]

    sent = serve(
        ThreadedWSGI(wsgi, threads=1),
        scope(),
        [{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}],
    )
    assert sent == []
    assert calls == []


def test_requests_beyond_the_threads_wait_for_one_and_all_are_answered() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.05)
        with lock:
            running -= 1
        start_response("200 OK", [])
        return [environ["QUERY_STRING"].encode()]

    app = ThreadedWSGI(wsgi, threads=3)
    answers: list[bytes] = []

    async def one(index: int) -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body":
                answers.append(message["body"])

        await app(scope(method="GET", query_string=str(index).encode()), receive, send)

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(10)))

    asyncio.run(main())
    assert sorted(answers, key=int) == [str(i).encode() for i in range(10)]
    assert most == 3


def test_a_web_process_runs_as_many_requests_at_once_as_it_has_database_connections() -> None:
    from piweb import config

    assert config.http_threads({}) == config.DB_POOL_MAX
    assert config.http_threads({"PIWEB_DB_POOL_MAX": "4"}) == 4
    assert config.http_threads({"PIWEB_DB_POOL_MAX": "0"}) == config.HTTP_THREADS
    assert config.http_threads({"PIWEB_DB_POOL_MAX": "4", "PIWEB_HTTP_THREADS": "12"}) == 12
    with pytest.raises(ValueError, match="PIWEB_HTTP_THREADS"):
        config.http_threads({"PIWEB_HTTP_THREADS": "0"})


def test_the_served_application_answers_through_the_threads_with_its_own_time() -> None:
    from piweb.asgi import application

    sent = serve(
        application,
        scope(
            method="GET",
            path="/healthz",
            raw_path=b"/healthz",
            query_string=b"",
            headers=[(b"host", b"127.0.0.1")],
        ),
        [{"type": "http.request"}],
    )
    assert sent[0]["status"] == 200
    headers = dict(sent[0]["headers"])
    assert headers[b"server-timing"].startswith(b"app;dur=")
    assert float(headers[b"server-timing"].removeprefix(b"app;dur=")) >= 0
    assert headers[b"x-request-id"]
