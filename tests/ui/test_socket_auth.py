"""Who may open a session socket: the Origin check (scheme, host and port) and API-token authentication."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from piweb.asgi import application
from sessions_app import services
from sessions_app.models import ApiToken
from tests.factories import session_file, small_tree

from .test_consumers import cookie_for, run

pytestmark = pytest.mark.django_db(transaction=True)
HOST = b"127.0.0.1:8000"


def socket(
    pk: int,
    *,
    origin: bytes | None = None,
    cookie: bytes | None = None,
    authorization: bytes | None = None,
    subprotocols: list[str] | None = None,
    query: str = "",
) -> WebsocketCommunicator:
    headers = [(b"host", HOST)]
    for name, value in ((b"origin", origin), (b"cookie", cookie), (b"authorization", authorization)):
        if value is not None:
            headers.append((name, value))
    return WebsocketCommunicator(
        application, f"/ws/sessions/{pk}/{query}", headers=headers, subprotocols=subprotocols
    )


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(
        actor=owner, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session


@pytest.fixture
def token(owner: Any) -> str:
    return ApiToken.objects.create(user=owner)[1]


async def outcome(ws: WebsocketCommunicator) -> tuple[bool, Any]:
    connected, detail = await ws.connect()
    if connected:
        state = await ws.receive_json_from(timeout=5)
        await ws.disconnect()
        return True, state
    return False, detail


def test_origin_must_match_scheme_host_and_port(owner: Any, stored: Any, settings: Any) -> None:
    cookie = cookie_for(owner)
    settings.CSRF_TRUSTED_ORIGINS = ["https://piweb.example.com"]

    async def scenario() -> None:
        assert (await outcome(socket(stored.pk, origin=b"http://127.0.0.1:8000", cookie=cookie)))[0]
        assert (await outcome(socket(stored.pk, origin=b"https://piweb.example.com", cookie=cookie)))[0]
        refused = [
            b"http://127.0.0.1:9999",  # same host, another port: another site
            b"https://127.0.0.1:8000",  # another scheme
            b"http://127.0.0.1",  # port 80 is not 8000
            b"http://piweb.example.com",
            b"https://piweb.example.com:8443",
            b"null",
        ]
        for origin in refused:
            connected, _ = await outcome(socket(stored.pk, origin=origin, cookie=cookie))
            assert not connected, origin

    run(scenario)


def test_a_token_in_the_authorization_header_opens_the_socket(stored: Any, token: str) -> None:
    async def scenario() -> None:
        connected, state = await outcome(socket(stored.pk, authorization=f"Token {token}".encode()))
        assert connected and state["seq"] == 5

    run(scenario)


def test_a_token_in_a_subprotocol_opens_the_socket_and_the_plain_protocol_is_chosen(
    stored: Any, token: str
) -> None:
    async def scenario() -> None:
        ws = socket(
            stored.pk, origin=b"http://127.0.0.1:8000", subprotocols=["piweb", f"piweb.token.{token}"]
        )
        connected, chosen = await ws.connect()
        assert connected
        # The token itself is never echoed back in the handshake.
        assert chosen == "piweb"
        assert (await ws.receive_json_from(timeout=5))["seq"] == 5
        await ws.disconnect()

    run(scenario)


def test_tokens_in_the_url_wrong_tokens_and_cookies_without_origin_are_refused(
    owner: Any, stored: Any, token: str
) -> None:
    cookie = cookie_for(owner)

    async def scenario() -> None:
        for ws in (
            socket(stored.pk, query=f"?token={token}"),
            socket(stored.pk, authorization=b"Token not-a-token"),
            socket(stored.pk, origin=b"http://127.0.0.1:8000", subprotocols=["piweb", "piweb.token.nope"]),
            # A cookie proves nothing when no browser says where the page came from.
            socket(stored.pk, cookie=cookie),
        ):
            connected, code = await outcome(ws)
            assert not connected and code == 4401

    run(scenario)


def test_another_users_token_sees_no_session(user: Callable[..., Any], stored: Any) -> None:
    other = ApiToken.objects.create(user=user("stranger"))[1]

    async def scenario() -> None:
        connected, code = await outcome(socket(stored.pk, authorization=f"Token {other}".encode()))
        assert not connected and code == 4403

    run(scenario)
