"""Presence across two ASGI server processes on one Redis: each viewer sees the other, and a viewer
whose server dies (no close frame, no goodbye) drops out once its heartbeat lapses."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import ClientConnection

from sessions_app import services
from teams import services as team_services
from teams.models import TeamMembership

from .servers import AsgiServer, PrivateRedis, cookie_for, open_socket, running, server_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
TTL = 2.0


async def roster(
    socket: ClientConnection, until: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    async with asyncio.timeout(10):
        while True:
            message = json.loads(await socket.recv())
            if message["type"] == "presence" and until(message["viewers"]):
                return list(message["viewers"])


def test_viewers_on_two_servers_see_each_other_and_a_dead_servers_viewer_drops_out(
    owner: Any, stored: Any, user: Callable[..., Any], logs: Path
) -> None:
    ada = user("ada")
    team = team_services.create_team(actor=owner, name="t")
    TeamMembership.objects.create(team=team, user=ada, role=TeamMembership.Role.VIEWER)
    services.share_with_team(session=stored, team=team, access="viewer", actor=owner)
    redis = PrivateRedis(logs)
    env = server_env(redis.url, PIWEB_PRESENCE_TTL=str(TTL), PIWEB_PRESENCE_HEARTBEAT="1")
    first, second = AsgiServer(env, logs, "web1"), AsgiServer(env, logs, "web2")
    owner_cookie, ada_cookie = cookie_for(owner), cookie_for(ada)

    async def scenario() -> tuple[float, float]:
        mine = await open_socket(first, stored.pk, cookie=owner_cookie)
        theirs = await open_socket(second, stored.pk, cookie=ada_cookie)
        for socket in (mine, theirs):
            assert json.loads(await socket.recv())["type"] == "state"
        await mine.send(json.dumps({"type": "presence", "node": "a1"}))
        await theirs.send(json.dumps({"type": "presence", "node": "u2"}))
        # Each server's viewer sees the other's, with the node selected there.
        seen = await roster(mine, lambda v: len(v) == 2)
        assert {(v["name"], v["node"]) for v in seen} == {("owner", "a1"), ("ada", "u2")}
        seen = await roster(theirs, lambda v: len(v) == 2)
        assert {(v["name"], v["node"]) for v in seen} == {("owner", "a1"), ("ada", "u2")}

        # Ada beats once more (answered, so stored), then her server dies: her socket never says
        # goodbye. The owner keeps beating on the other server.
        await theirs.send(json.dumps({"type": "presence", "node": "u2"}))
        beat = time.monotonic()
        await theirs.send(json.dumps({"type": "sync", "seq": 0}))
        async with asyncio.timeout(10):  # a socket answers in order: the beat was stored before this
            while json.loads(await theirs.recv())["type"] != "state":
                pass
        second.service.kill()
        died = time.monotonic()
        while True:
            await mine.send(json.dumps({"type": "presence", "node": "a1"}))
            try:
                viewers = await roster(mine, lambda v: True)
            except TimeoutError:
                continue
            if [v["name"] for v in viewers] == ["owner"]:
                break
            assert time.monotonic() - died < TTL + 5, viewers
            await asyncio.sleep(0.5)
        # Counted from her last beat, not from the kill: on a busy machine the answer that confirms the
        # beat may itself take longer than the TTL, and she is rightly gone the moment the server is.
        gone_after = time.monotonic() - beat
        await mine.close()
        return gone_after, died - beat

    with running(redis, first, second):
        gone_after, killed_after = async_to_sync(scenario)()
    print(f"a dead server's viewer dropped out {gone_after:.2f} s after her last beat (TTL {TTL} s)")
    # Her last beat was stored before the kill: she stays until it is TTL old, and no longer.
    assert TTL - 0.5 <= gone_after <= max(TTL, killed_after) + 3
