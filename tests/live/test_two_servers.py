"""Two ASGI server processes on one Redis and one database: appends through one reach viewers of both."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync

from .servers import AsgiServer, PrivateRedis, open_socket, running, server_env, token_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
APPENDS = 30


def test_appends_through_one_server_reach_viewers_of_the_other_in_order(
    owner: Any, stored: Any, logs: Path
) -> None:
    redis = PrivateRedis(logs)
    env = server_env(redis.url)
    first, second = AsgiServer(env, logs, "web1"), AsgiServer(env, logs, "web2")
    token = token_for(owner)
    start_seq = stored.next_seq - 1

    async def scenario() -> None:
        # Viewers on both servers, token-authenticated as a script would be.
        sockets = [await open_socket(server, stored.pk, token=token) for server in (first, second, second)]
        for socket in sockets:
            assert json.loads(await socket.recv())["seq"] == start_seq
        async with httpx.AsyncClient(
            base_url=first.base_url, headers={"Authorization": f"Token {token}"}, timeout=10
        ) as http:
            for n in range(APPENDS):
                entry = {"type": "custom", "customType": "note", "data": f"n{n}"}
                response = await http.post(f"/api/sessions/{stored.pk}/append/", json={"entries": [entry]})
                assert response.status_code == 201, response.text
        expected = list(range(start_seq + 1, start_seq + 1 + APPENDS))
        for index, socket in enumerate(sockets):
            seqs: list[int] = []
            async with asyncio.timeout(15):
                while len(seqs) < APPENDS:
                    message = json.loads(await socket.recv())
                    assert message["type"] == "event" and message["event"] == "entries_appended"
                    seqs.append(message["seq"])
            # In order and with no gap, on the server that made the append and on the other one.
            assert seqs == expected, (index, seqs)
            await socket.close()

    with running(redis, first, second):
        async_to_sync(scenario)()


def test_a_token_revoked_through_one_server_is_refused_by_the_other_at_once(
    owner: Any, stored: Any, logs: Path
) -> None:
    redis = PrivateRedis(logs)
    env = server_env(redis.url)
    first, second = AsgiServer(env, logs, "web1"), AsgiServer(env, logs, "web2")
    token, other = token_for(owner), token_for(owner)
    url = f"/api/sessions/{stored.pk}/"
    with running(redis, first, second):
        clients = [
            httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            for server in (first, second)
        ]
        # Both servers have checked the token, and remember it.
        for client in clients * 3:
            assert client.get(url).status_code == 200
        token_id = token[:15]
        revoke = httpx.delete(
            f"{first.base_url}/api/tokens/{token_id}/", headers={"Authorization": f"Bearer {other}"}
        )
        assert revoke.status_code == 204, revoke.text
        # The very next request, on either server, is refused.
        for client in reversed(clients):
            assert client.get(url).status_code in (401, 403)
            client.close()
        assert (
            httpx.get(f"{second.base_url}{url}", headers={"Authorization": f"Bearer {other}"}).status_code
            == 200
        )
