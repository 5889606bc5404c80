"""Presence over the session socket: who has the session open and which node each has selected.

Through the real ASGI stack with the Redis channel layer and the Redis presence board.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from piweb.asgi import application
from sessions_app import services
from teams import services as team_services
from teams.models import TeamMembership
from tests.ui.test_consumers import ORIGIN, communicator, cookie_for, redis_layer_required, run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True, params=["redis", "memory"])
def board_kind(request: pytest.FixtureRequest, settings: Any) -> str:
    """Run each test on the Redis board (several processes) and on the embedded mode's memory board."""
    settings.PIWEB_PRESENCE_TTL = 1.0
    if request.param == "redis":
        redis_layer_required()
        assert settings.PRESENCE_REDIS_URL, "presence tests use the Redis board (set REDIS_URL)"
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
        settings.PRESENCE_REDIS_URL = ""
    return str(request.param)


@pytest.fixture
def shared(user: Callable[..., Any]) -> tuple[Any, Any, Any]:
    """Return (session, its owner eddie, ada: an editor of the team it is shared with)."""
    eddie, ada = user("eddie", first_name="Eddie", last_name="Stone"), user("ada")
    session = services.create_session(actor=eddie, cwd="/w")
    services.append_entries(
        session=session,
        entries=[
            {"type": "message", "id": "n1", "message": {"role": "user", "content": "hi", "timestamp": 1}}
        ],
        actor=eddie,
    )
    team = team_services.create_team(actor=eddie, name="t")
    TeamMembership.objects.create(team=team, user=ada, role=TeamMembership.Role.EDITOR)
    services.share_with_team(session=session, team=team, access="editor", actor=eddie)
    return session, eddie, ada


async def opened(ws: WebsocketCommunicator) -> WebsocketCommunicator:
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from(timeout=5))["type"] == "state"
    return ws


async def roster(ws: WebsocketCommunicator, until: Callable[[list[dict[str, Any]]], bool]) -> dict[str, Any]:
    """Return the first presence message whose viewers satisfy ``until`` (earlier ones are passed over)."""
    while True:
        message = await ws.receive_json_from(timeout=5)
        if message["type"] == "presence" and until(message["viewers"]):
            return message


def names(viewers: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(v["name"], v["node"]) for v in viewers]


def test_members_see_each_other_and_the_node_each_has_selected(shared: Any) -> None:
    session, eddie, ada = shared
    eddie_cookie, ada_cookie = cookie_for(eddie), cookie_for(ada)

    async def scenario() -> None:
        first = await opened(communicator(session.pk, cookie=eddie_cookie))
        await first.send_json_to({"type": "presence", "node": None})
        alone = await roster(first, lambda v: len(v) == 1)
        assert names(alone["viewers"]) == [("Eddie Stone", None)]
        assert alone["you"] == alone["viewers"][0]["key"]

        second = await opened(communicator(session.pk, cookie=ada_cookie))
        await second.send_json_to({"type": "presence", "node": "n1"})
        both = await roster(first, lambda v: len(v) == 2)
        assert names(both["viewers"]) == [("ada", "n1"), ("Eddie Stone", None)]
        seen_by_ada = await roster(second, lambda v: len(v) == 2)
        assert seen_by_ada["you"] != alone["you"]

        # Ada selects another node: Eddie sees it move.
        await second.send_json_to({"type": "presence", "node": "n0"})
        moved = await roster(first, lambda v: ("ada", "n0") in names(v))
        assert len(moved["viewers"]) == 2

        # Ada closes her tab: she is gone at once.
        await second.disconnect()
        gone = await roster(first, lambda v: len(v) == 1)
        assert names(gone["viewers"]) == [("Eddie Stone", None)]
        await first.disconnect()

    run(scenario)


def test_a_tab_that_stops_beating_without_closing_drops_out_after_the_ttl(shared: Any) -> None:
    session, eddie, ada = shared
    eddie_cookie, ada_cookie = cookie_for(eddie), cookie_for(ada)

    async def scenario() -> None:
        first = await opened(communicator(session.pk, cookie=eddie_cookie))
        silent = await opened(communicator(session.pk, cookie=ada_cookie))
        await first.send_json_to({"type": "presence", "node": None})
        await silent.send_json_to({"type": "presence", "node": "n1"})
        await roster(first, lambda v: len(v) == 2)
        # Ada's connection is dead but never closed (no close frame, no disconnect): Eddie keeps beating.
        await asyncio.sleep(1.3)
        await first.send_json_to({"type": "presence", "node": None})
        # (Messages sent before the beat may still be queued: wait for the answer without her.)
        alone = await roster(first, lambda v: len(v) == 1)
        assert names(alone["viewers"]) == [("Eddie Stone", None)]
        await first.disconnect()
        await silent.disconnect()

    run(scenario)


def test_a_link_holder_is_shown_as_a_link_visitor_and_sees_no_one(shared: Any) -> None:
    session, eddie, _ = shared
    link = services.create_share_link(session=session, actor=eddie)
    token = link.raw_token
    eddie_cookie = cookie_for(eddie)

    async def scenario() -> None:
        member = await opened(communicator(session.pk, cookie=eddie_cookie))
        await member.send_json_to({"type": "presence", "node": None})
        await roster(member, lambda v: len(v) == 1)
        visitor = await opened(
            WebsocketCommunicator(
                application,
                f"/ws/sessions/{session.pk}/",
                headers=[(b"host", b"127.0.0.1:8000"), (b"origin", ORIGIN)],
                subprotocols=["piweb", f"piweb.link.{token}"],
            )
        )
        await visitor.send_json_to({"type": "presence", "node": "n1"})
        seen = await roster(member, lambda v: len(v) == 2)
        [shown] = [v for v in seen["viewers"] if v["kind"] == "link"]
        assert (shown["name"], shown["node"], shown["userId"]) == ("link visitor", "n1", None)
        assert token not in str(seen) and link.token_prefix not in str(seen)
        # The visitor is told nothing about who else is there.
        assert await visitor.receive_nothing(timeout=0.5)
        await visitor.disconnect()
        await roster(member, lambda v: len(v) == 1)
        await member.disconnect()

    run(scenario)


def test_a_revoked_viewer_disappears_when_the_socket_closes(shared: Any) -> None:
    session, eddie, ada = shared
    eddie_cookie, ada_cookie = cookie_for(eddie), cookie_for(ada)
    team = session.shares.get().team

    async def scenario() -> None:
        first = await opened(communicator(session.pk, cookie=eddie_cookie))
        second = await opened(communicator(session.pk, cookie=ada_cookie))
        await first.send_json_to({"type": "presence", "node": None})
        await second.send_json_to({"type": "presence", "node": "n1"})
        await roster(first, lambda v: len(v) == 2)
        from channels.db import database_sync_to_async

        await database_sync_to_async(services.unshare_with_team)(session=session, team=team, actor=eddie)
        closed = await second.receive_output(timeout=5)
        while closed["type"] != "websocket.close":
            closed = await second.receive_output(timeout=5)
        assert closed["code"] == 4403
        gone = await roster(first, lambda v: len(v) == 1)
        assert names(gone["viewers"]) == [("Eddie Stone", None)]
        await first.disconnect()

    run(scenario)


@pytest.mark.parametrize("node", [5, "", "x" * 256, ["n1"]])
def test_a_bad_node_is_refused_with_a_message(shared: Any, node: Any) -> None:
    session, eddie, _ = shared
    cookie = cookie_for(eddie)

    async def scenario() -> None:
        ws = await opened(communicator(session.pk, cookie=cookie))
        await ws.send_json_to({"type": "presence", "node": node})
        answer = await ws.receive_json_from(timeout=5)
        assert answer["type"] == "error" and "presence: node must be an entry id" in answer["error"]
        await ws.disconnect()

    run(scenario)


def test_a_burst_of_moves_reaches_the_others_as_a_few_announcements_ending_at_the_last(shared: Any) -> None:
    session, eddie, ada = shared
    eddie_cookie, ada_cookie = cookie_for(eddie), cookie_for(ada)

    async def scenario() -> None:
        first = await opened(communicator(session.pk, cookie=eddie_cookie))
        second = await opened(communicator(session.pk, cookie=ada_cookie))
        await first.send_json_to({"type": "presence", "node": None})
        await second.send_json_to({"type": "presence", "node": "m0"})
        await roster(first, lambda v: ("ada", "m0") in names(v))
        for n in range(1, 30):
            await second.send_json_to({"type": "presence", "node": f"m{n}"})
        seen = 0
        while True:
            message = await first.receive_json_from(timeout=5)
            seen += message["type"] == "presence"
            if message["type"] == "presence" and ("ada", "m29") in names(message["viewers"]):
                break
        # Where she ended is what Eddie sees, without a message for each step.
        assert seen <= 5, seen
        await first.disconnect()
        await second.disconnect()

    run(scenario)
