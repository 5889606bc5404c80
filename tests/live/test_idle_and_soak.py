"""Sockets held open for a long time on real Redis and a real ASGI server keep receiving events.

An idle socket must outlive the channel layer's blocking Redis read (5 s) by far: the test keeps one
quiet for a minute, then appends. The soak keeps a few sockets for ten minutes with sparse events and
checks that every event reaches every socket and that no socket is ever closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from websockets.exceptions import ConnectionClosed

from .servers import (
    AsgiServer,
    PrivateRedis,
    cookie_for,
    open_socket,
    receive_until,
    running,
    server_env,
    token_for,
)

IDLE_SECONDS = 60
SOAK_SECONDS = 600
SOAK_SOCKETS = 4
SOAK_EVENTS = 10

pytestmark = [pytest.mark.slow, pytest.mark.background]


def append(server: AsgiServer, token: str, pk: int, text: str) -> int:
    """Append one entry through the server's API and return the session's new last seq."""
    entry = {"type": "custom", "customType": "note", "data": text}
    response = httpx.post(
        f"{server.base_url}/api/sessions/{pk}/append/",
        json={"entries": [entry]},
        headers={"Authorization": f"Token {token}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return int(response.json()["lastSeq"])


@pytest.mark.timeout(IDLE_SECONDS + 90)
def test_a_socket_idle_for_a_minute_still_receives_the_next_append(
    owner: Any, stored: Any, logs: Path
) -> None:
    redis = PrivateRedis(logs)
    server = AsgiServer(server_env(redis.url), logs)
    cookie, token = cookie_for(owner), token_for(owner)

    async def scenario() -> None:
        socket = await open_socket(server, stored.pk, cookie=cookie)
        state = json.loads(await socket.recv())
        assert state["type"] == "state"
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            # Nothing happens for a minute: the socket must neither close nor receive anything.
            await asyncio.wait_for(socket.recv(), timeout=IDLE_SECONDS)
        assert time.monotonic() - started >= IDLE_SECONDS
        seq = await asyncio.to_thread(append, server, token, stored.pk, "after a quiet minute")
        messages = await receive_until(socket, seq, timeout=10)
        assert messages[-1]["event"] == "entries_appended"
        await socket.close()

    with running(redis, server):
        async_to_sync(scenario)()
        assert "TimeoutError" not in server.log(), server.log()


@pytest.mark.timeout(SOAK_SECONDS + 120)
def test_soak_ten_minutes_every_event_reaches_every_socket(owner: Any, stored: Any, logs: Path) -> None:
    redis = PrivateRedis(logs)
    server = AsgiServer(server_env(redis.url), logs)
    cookie, token = cookie_for(owner), token_for(owner)
    gap = SOAK_SECONDS / SOAK_EVENTS

    async def scenario() -> None:
        sockets = [await open_socket(server, stored.pk, cookie=cookie) for _ in range(SOAK_SOCKETS)]
        received: list[list[int]] = [[] for _ in sockets]

        async def listen(index: int) -> None:
            async for raw in sockets[index]:
                message = json.loads(raw)
                if message["type"] == "event":
                    received[index].append(message["seq"])

        listeners = [asyncio.create_task(listen(i)) for i in range(len(sockets))]
        sent: list[int] = []
        started = time.monotonic()
        for n in range(SOAK_EVENTS):
            # Sparse events, spread over the whole soak: most of the time every socket sits idle.
            await asyncio.sleep(max(0.0, started + (n + 1) * gap - 5 - time.monotonic()))
            sent.append(await asyncio.to_thread(append, server, token, stored.pk, f"soak {n}"))
        await asyncio.sleep(5)
        for index, listener in enumerate(listeners):
            assert not listener.done(), f"socket {index} closed: {sockets[index].close_code}"
        assert all(r == sent for r in received), (sent, received)
        assert time.monotonic() - started >= SOAK_SECONDS - 10
        for socket in sockets:
            await socket.close()
        for listener in listeners:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await listener

    with running(redis, server):
        async_to_sync(scenario)()
