"""The live session socket, through the real ASGI stack (Origin check, cookie auth) and Redis layer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from redis.exceptions import ConnectionError as RedisConnectionError

from core import realtime
from core.actors import SystemActor
from piweb.asgi import application
from sessions_app import services
from tests.factories import session_file, small_tree
from tests.factories import user_message as user_msg

# The consumer's database calls close connections that sit in a transaction, so tests commit for real.
pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = b"http://127.0.0.1:8000"


def redis_layer_required() -> None:
    backend = settings.CHANNEL_LAYERS["default"]["BACKEND"]
    if "Redis" not in backend:
        pytest.fail(f"consumer tests need the Redis channel layer (set REDIS_URL); got {backend}")


def cookie_for(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def communicator(pk: int, *, cookie: bytes | None, origin: bytes | None = ORIGIN) -> WebsocketCommunicator:
    headers = [(b"host", b"127.0.0.1:8000")]
    if origin is not None:
        headers.append((b"origin", origin))
    if cookie is not None:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, f"/ws/sessions/{pk}/", headers=headers)


async def receive_state(ws: WebsocketCommunicator) -> dict[str, Any]:
    """Return the next state message, discarding events before it."""
    while True:
        message = await ws.receive_json_from(timeout=5)
        if message["type"] == "state":
            return message


def run(coro: Callable[[], Awaitable[None]]) -> None:
    # The database work of the consumer runs back on this thread, inside the test transaction.
    async_to_sync(coro)()


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(
        actor=owner, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session


def test_owner_connects_and_learns_the_current_position(owner: Any, stored: Any) -> None:
    redis_layer_required()

    cookie = cookie_for(owner)

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        connected, _ = await ws.connect()
        assert connected
        state = await ws.receive_json_from()
        assert state == {"type": "state", "session": stored.pk, "seq": 5, "leafId": "a3", "behind": None}
        await ws.disconnect()

    run(scenario)


def test_anonymous_socket_is_refused(stored: Any) -> None:
    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=None)
        connected, code = await ws.connect()
        assert not connected
        assert code == 4401

    run(scenario)


def test_another_users_session_is_refused(user: Callable[..., Any], stored: Any) -> None:
    cookie = cookie_for(user("stranger"))

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        connected, code = await ws.connect()
        assert not connected
        assert code == 4403
        missing = communicator(stored.pk + 10_000, cookie=cookie)
        connected, code = await missing.connect()
        assert not connected
        assert code == 4403

    run(scenario)


def test_foreign_origin_is_refused_even_with_a_valid_cookie(owner: Any, stored: Any) -> None:
    cookie = cookie_for(owner)

    async def scenario() -> None:
        for origin in (b"http://evil.example", b"null"):
            ws = communicator(stored.pk, cookie=cookie, origin=origin)
            connected, _ = await ws.connect()
            assert not connected, origin

    run(scenario)


def test_group_events_reach_the_socket_with_their_sequence(owner: Any, stored: Any) -> None:
    redis_layer_required()

    cookie = cookie_for(owner)

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        assert (await ws.connect())[0]
        await ws.receive_json_from()
        layer = get_channel_layer()
        await layer.group_send(
            realtime.group_name(stored.pk),
            {"type": "session.event", "event": "entries_appended", "session": stored.pk, "seq": 6},
        )
        event = await ws.receive_json_from(timeout=5)
        assert event == {"type": "event", "event": "entries_appended", "session": stored.pk, "seq": 6}
        # Events for other sessions do not leak in.
        await layer.group_send(
            realtime.group_name(stored.pk + 1),
            {"type": "session.event", "event": "entries_appended", "session": stored.pk + 1, "seq": 9},
        )
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()

    run(scenario)


def test_sync_reports_a_gap_after_a_dropped_event_and_entries_since_fills_it(owner: Any, stored: Any) -> None:
    redis_layer_required()

    cookie = cookie_for(owner)

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        assert (await ws.connect())[0]
        first = await ws.receive_json_from()
        assert first["seq"] == 5
        # Two entries land; whatever event announces them is thrown away, as a dropped event would be.
        await database_sync_to_async(services.append_entries)(
            session=stored,
            entries=[user_msg("u4", "a3", "more"), user_msg("u5", "u4", "even more")],
            actor=SystemActor("tests"),
        )
        await ws.send_json_to({"type": "sync", "seq": 5})
        state = await receive_state(ws)
        assert state["seq"] == 7 and state["leafId"] == "u5" and state["behind"] is True
        await ws.send_json_to({"type": "sync", "seq": 7})
        assert (await receive_state(ws))["behind"] is False
        await ws.disconnect()

    run(scenario)
    # The catch-up the client then makes returns exactly the missing entries.
    client = Client()
    client.force_login(owner)
    body = client.get(f"/api/sessions/{stored.pk}/entries/", {"since": "a3"}).json()
    assert [e["id"] for e in body["entries"]] == ["u4", "u5"]
    assert body["lastSeq"] == 7


def test_unknown_messages_get_an_error_and_keep_the_socket_open(owner: Any, stored: Any) -> None:
    cookie = cookie_for(owner)

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        assert (await ws.connect())[0]
        await ws.receive_json_from()
        await ws.send_json_to({"type": "subscribe", "session": 999})
        assert (await ws.receive_json_from())["type"] == "error"
        await ws.send_json_to({"type": "sync", "seq": 5})
        assert (await ws.receive_json_from())["type"] == "state"
        await ws.disconnect()

    run(scenario)


def test_a_socket_whose_layer_redis_does_not_answer_is_told_to_try_again(
    owner: Any, stored: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis_layer_required()
    cookie = cookie_for(owner)

    async def unreachable(*args: Any, **kwargs: Any) -> None:
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    async def scenario() -> None:
        ws = communicator(stored.pk, cookie=cookie)
        monkeypatch.setattr(get_channel_layer(), "group_add", unreachable)
        connected, _ = await ws.connect()
        # Accepted and closed with "try again later", which the page retries; never a failed handshake.
        assert connected
        assert await ws.receive_output(timeout=5) == {"type": "websocket.close", "code": 1013}

    run(scenario)
