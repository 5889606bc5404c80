"""A Pi writing a session live (the Pi package): its pushes and beats show it on the session's pages.

Through the real ASGI stack: members' sockets hear "live from Pi on <device>" as a presence viewer of
kind "pi" at the entry it wrote last, on the Redis board and channel layer and on the embedded mode's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from sessions_app.models import ChatSession
from tests.ui.test_consumers import communicator, cookie_for, redis_layer_required, run

from .helpers import chain, header

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True, params=["redis", "memory"])
def board_kind(request: pytest.FixtureRequest, settings: Any) -> str:
    settings.PIWEB_WRITER_TTL = 1.0
    settings.PIWEB_PRESENCE_TTL = 1.0
    if request.param == "redis":
        redis_layer_required()
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
        settings.PRESENCE_REDIS_URL = ""
    return str(request.param)


def push(client: APIClient, lines: list[str], start: int = 0, device: str = "laptop") -> Any:
    control = {
        "header": header(),
        "from": {"lines": start, "bytes": 0, "lastId": None},
        "to": {"lines": start + len(lines), "bytes": 0},
        "device": device,
    }
    body = json.dumps(control).encode() + b"\n" + "".join(line + "\n" for line in lines).encode()
    return client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")


def beat(client: APIClient, pi_id: str = "sync-demo", leaving: bool = False, device: str = "laptop") -> Any:
    body = {"piId": pi_id, "device": device, "leaving": leaving}
    return client.post("/api/sync/presence/", body, format="json")


async def joined(pk: int, cookie: bytes) -> WebsocketCommunicator:
    ws = communicator(pk, cookie=cookie)
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "presence", "node": None})
    return ws


async def roster(ws: WebsocketCommunicator, until: Callable[[list[dict[str, Any]]], bool]) -> list[Any]:
    while True:
        message = await ws.receive_json_from(timeout=5)
        if message["type"] == "presence" and until(message["viewers"]):
            return list(message["viewers"])


def writers(viewers: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(v["name"], v["device"], v["node"]) for v in viewers if v["kind"] == "pi"]


def test_a_pushing_pi_is_shown_live_at_what_it_wrote_until_it_leaves(
    user: Callable[..., Any], settings: Any
) -> None:
    settings.PIWEB_WRITER_TTL = 30.0  # this one is about leaving, not lapsing
    ada = user("ada", first_name="Ada", last_name="King")
    client = APIClient()
    client.force_authenticate(user=ada)
    assert push(client, chain(2)).status_code == 200
    session = ChatSession.objects.get(pi_id="sync-demo")
    cookie = cookie_for(ada)

    async def scenario() -> None:
        page = await joined(session.pk, cookie)
        # The first roster already has Pi (its push was moments ago), at the last entry it wrote.
        seen = await roster(page, lambda v: any(x["kind"] == "pi" for x in v))
        assert writers(seen) == [("Ada King", "laptop", "e1")]
        # Pi writes on: the page hears the entries and sees Pi move to the newest one.
        answer = await sync_to_async(push)(client, chain(4)[2:], start=2)
        assert answer.status_code == 200
        moved = await roster(page, lambda v: ("Ada King", "laptop", "e3") in writers(v))
        assert len(writers(moved)) == 1, "one Pi per device, however often it pushes"
        # A beat answers with the pace the package should keep.
        answer = await sync_to_async(beat)(client)
        assert answer.status_code == 200 and answer.json() == {"sessionId": session.pk, "heartbeat": 15.0}
        # Pi quits: gone from the page at once.
        assert (await sync_to_async(beat)(client, leaving=True)).status_code == 200
        await roster(page, lambda v: not writers(v))
        await page.disconnect()

    run(scenario)


def test_a_pi_that_stops_beating_drops_out_after_its_ttl(user: Callable[..., Any]) -> None:
    ada = user("ada")
    client = APIClient()
    client.force_authenticate(user=ada)
    assert push(client, chain(2), device="desk").status_code == 200
    session = ChatSession.objects.get(pi_id="sync-demo")
    cookie = cookie_for(ada)

    async def scenario() -> None:
        page = await joined(session.pk, cookie)
        await roster(page, lambda v: writers(v) == [("ada", "desk", "e1")])
        await asyncio.sleep(1.3)  # Pi was killed: no leaving, no beat
        await page.send_json_to({"type": "presence", "node": None})
        await roster(page, lambda v: not writers(v) and len(v) == 1)
        await page.disconnect()

    run(scenario)


def test_beats_only_for_your_own_sessions(user: Callable[..., Any]) -> None:
    ada, eve = user("ada"), user("eve")
    mine = APIClient()
    mine.force_authenticate(user=ada)
    assert push(mine, chain(2)).status_code == 200
    other = APIClient()
    other.force_authenticate(user=eve)
    refused = beat(other)
    assert refused.status_code == 404
    assert "no session" in refused.json()["error"]
    assert beat(APIClient()).status_code in (401, 403)
    assert beat(mine, pi_id="nothing-pushed").status_code == 404
    too_long = beat(mine, device="x" * 81)
    assert too_long.status_code == 400
