"""Body caps, query and path values, JSON depth and the websocket route: hostile input gets a 4xx."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from live.routing import websocket_urlpatterns
from piweb.limits import BodyLimitASGI
from sessions_app import services
from tests.factories import session_file, small_tree

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def stored(api_client: Any) -> Any:
    return services.import_jsonl(
        actor=api_client.user, data=session_file(small_tree()), filename="s.jsonl"
    ).session


@pytest.mark.parametrize(
    "path",
    ["/api/sessions/{pk}/append/", "/api/sessions/{pk}/compact/", "/api/sessions/{pk}/runs/", "/api/sync/"],
)
def test_a_body_nested_100k_deep_is_a_400(api_client: Any, stored: Any, path: str) -> None:
    response = api_client.post(path.format(pk=stored.pk), data=DEEP, content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]


def test_a_team_body_nested_100k_deep_is_a_400(api_client: Any) -> None:
    response = api_client.post(
        "/api/teams/", data=b'{"name": ' + DEEP + b"}", content_type="application/json"
    )
    assert response.status_code == 400


def test_an_anonymous_oversized_token_request_is_refused_before_parsing(client: Any) -> None:
    with override_settings(PIWEB_MAX_BODY_BYTES=1000):
        response = client.post("/api/token/", data=b"{" + b" " * 5000 + b"}", content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"error": "The request body is larger than 1000 bytes."}


def test_the_login_form_is_capped_too(client: Any) -> None:
    with override_settings(PIWEB_MAX_BODY_BYTES=1000):
        response = client.post("/accounts/login/", {"username": "x" * 5000, "password": "y"})
    assert response.status_code == 413


def test_import_alone_accepts_bodies_past_the_cap(api_client: Any) -> None:
    body = session_file(small_tree())
    with override_settings(PIWEB_MAX_BODY_BYTES=100):
        response = api_client.post("/api/sessions/import/", data=body, content_type="application/x-ndjson")
    assert len(body) > 100
    assert response.status_code == 201


@pytest.mark.parametrize(
    "url",
    [
        "/?q=a%00b",
        "/s/a%00b/",
        "/api/sessions/{pk}/entries/a%00b/",
        "/api/sync/?piId=a%00b",
        "/api/sessions/{pk}/context/?leaf=a%00",
        "/api/sessions/{pk}/entries/?since=%00",
        "/api/sessions/{pk}/?link=%00",
    ],
)
def test_a_nul_in_a_query_or_path_is_a_400(api_client: Any, stored: Any, url: str) -> None:
    api_client.force_login(api_client.user)
    response = api_client.get(url.format(pk=stored.pk))
    assert response.status_code == 400
    assert "NUL" in (response.json()["error"] if url.startswith("/api/") else response.content.decode())


def _ws_close_code(path: str) -> int | None:
    async def attempt() -> int | None:
        communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return None if connected else code

    return asyncio.run(attempt())


def test_a_websocket_path_with_a_non_numeric_id_is_refused_not_an_error() -> None:
    assert _ws_close_code("/ws/sessions/abc/") == 4404
    assert _ws_close_code("/ws/nothing/") == 4404


def _asgi_status(path: str, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[int, bool]:
    """Return the status an ASGI app wrapped in BodyLimitASGI answers, and whether the app ran."""
    ran = False

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal ran
        while (await receive())["type"] == "http.request":
            pass
        ran = True

    async def run() -> int:
        pending = [
            {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
            for i, c in enumerate(chunks)
        ]
        sent: list[Any] = []

        async def receive() -> Any:
            return pending.pop(0) if pending else {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "POST", "headers": headers}
        await BodyLimitASGI(app)(scope, receive, send)
        return sent[0]["status"] if sent else 0

    return asyncio.run(run()), ran


@override_settings(PIWEB_MAX_BODY_BYTES=1000)
def test_asgi_refuses_from_the_declared_length_without_reading_the_body() -> None:
    status, ran = _asgi_status("/api/token/", [(b"content-length", b"40000000")], [b""])
    assert (status, ran) == (413, False)


@override_settings(PIWEB_MAX_BODY_BYTES=1000)
def test_asgi_refuses_an_undeclared_body_once_it_passes_the_limit() -> None:
    status, _ = _asgi_status("/api/token/", [], [b"x" * 600, b"x" * 600, b"x" * 600])
    assert status == 413
