"""Share links: what a frozen or path-scoped link shows, expiry, and revocation closing live sockets."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.utils import timezone
from rest_framework.test import APIClient

from piweb.asgi import application
from sessions_app import services
from sessions_app.models import ChatSession

from .conftest import World, build_world

BRANCH_ONE = {"u1", "a1", "u2", "a2"}
BRANCH_TWO = {"u1", "a1", "u3", "a3"}  # the leaf's path


def holder(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_SHARE_TOKEN=token)
    return client


def entry_ids(client: APIClient, pk: int) -> set[str]:
    response = client.get(f"/api/sessions/{pk}/entries/")
    assert response.status_code == 200, response.data
    return {e["id"] for e in response.data["entries"] if e.get("id")}


def append_more(session: ChatSession) -> str:
    rows = services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "message", "message": {"role": "user", "content": "later", "timestamp": 9}}],
    )
    return str(rows[-1].entry_id)


def tree_ids(client: APIClient, pk: int) -> set[str]:
    response = client.get(f"/api/sessions/{pk}/tree/")
    assert response.status_code == 200
    return {item["id"] for item in response.data["items"] if item["kind"] == "node"}


def export_ids(client: APIClient, pk: int) -> set[str]:
    response = client.get(f"/api/sessions/{pk}/export/")
    assert response.status_code == 200
    import json

    lines = b"".join(response.streaming_content).decode().splitlines()
    return {json.loads(line).get("id") for line in lines[1:]}


@pytest.fixture
def w(user: Callable[..., Any]) -> World:
    return build_world(user)


def test_a_live_tree_link_follows_new_entries(w: World) -> None:
    new_id = append_more(w.session)
    assert new_id in entry_ids(holder(w.link.raw_token), w.session.pk)


def test_a_frozen_link_never_shows_entries_appended_later(w: World) -> None:
    link = services.create_share_link(session=w.session, actor=w.owner, frozen=True)
    new_id = append_more(w.session)
    client = holder(link.raw_token)
    pk = w.session.pk
    assert entry_ids(client, pk) == BRANCH_ONE | BRANCH_TWO
    assert client.get(f"/api/sessions/{pk}/entries/{new_id}/").status_code == 404
    assert new_id not in tree_ids(client, pk)
    assert new_id not in export_ids(client, pk)
    detail = client.get(f"/api/sessions/{pk}/")
    assert detail.data["leafId"] == "a3" and detail.data["lastSeq"] == 5
    assert client.get(f"/api/sessions/{pk}/context/", {"leaf": new_id}).status_code == 404
    assert client.get(f"/api/sessions/{pk}/path/").data["leafId"] == "a3"


def test_a_path_link_never_reveals_sibling_branches(w: World) -> None:
    link = services.create_share_link(session=w.session, actor=w.owner, scope="path", entry_id="a3")
    client = holder(link.raw_token)
    pk = w.session.pk
    assert entry_ids(client, pk) == BRANCH_TWO
    assert tree_ids(client, pk) == BRANCH_TWO
    assert export_ids(client, pk) == BRANCH_TWO
    for hidden in ("u2", "a2"):
        assert client.get(f"/api/sessions/{pk}/entries/{hidden}/").status_code == 404
        assert client.get(f"/api/sessions/{pk}/context/", {"leaf": hidden}).status_code == 404
        assert client.get(f"/api/sessions/{pk}/path/", {"leaf": hidden}).status_code == 404
    assert client.get(f"/api/sessions/{pk}/entries/", {"since": "u2"}).status_code == 404
    # Asking for entries by id leaves out those of the other branch.
    named = client.get(f"/api/sessions/{pk}/entries/", {"id": ["u2", "a3", "a2", "u1"]}).data["entries"]
    assert [e["id"] for e in named] == ["u1", "a3"]


def test_a_current_path_link_keeps_the_path_it_was_made_on(w: World) -> None:
    link = services.create_share_link(session=w.session, actor=w.owner, scope="path")
    client = holder(link.raw_token)
    assert entry_ids(client, w.session.pk) == BRANCH_TWO
    services.navigate_without_summary(session=w.session, actor=w.session.owner, target_id="a2")
    assert entry_ids(client, w.session.pk) == BRANCH_TWO


def test_an_expired_link_stops_working(w: World) -> None:
    link = services.create_share_link(
        session=w.session, actor=w.owner, expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    assert holder(link.raw_token).get(f"/api/sessions/{w.session.pk}/").status_code == 404
    assert APIClient().get(f"/s/{link.raw_token}/").status_code == 404


def test_a_link_is_for_its_own_session_only(w: World) -> None:
    mine = services.import_jsonl(actor=w.other, data=b'{"type":"session","version":3,"id":"x","cwd":"/"}\n')
    assert holder(w.link.raw_token).get(f"/api/sessions/{mine.session.pk}/").status_code == 404


def test_writes_through_a_link_are_refused_even_when_signed_in(w: World) -> None:
    client = holder(w.link.raw_token)
    client.force_login(w.other)
    pk = w.session.pk
    assert client.get(f"/api/sessions/{pk}/").status_code == 200
    assert client.post(f"/api/sessions/{pk}/navigate/", {"targetId": "a2"}, format="json").status_code == 403
    assert (
        client.post(
            f"/api/sessions/{pk}/labels/", {"targetId": "u1", "label": "x"}, format="json"
        ).status_code
        == 403
    )
    assert client.post(f"/api/sessions/{pk}/links/", {}, format="json").status_code == 404


def test_a_signed_in_link_holder_forks_with_provenance_inside_the_scope(w: World) -> None:
    link = services.create_share_link(session=w.session, actor=w.owner, scope="path", entry_id="a3")
    client = holder(link.raw_token)
    client.force_login(w.other)
    pk = w.session.pk
    assert client.post(f"/api/sessions/{pk}/fork/", {"entryId": "a2"}, format="json").status_code == 404
    assert (
        client.post(
            f"/api/sessions/{pk}/fork/", {"entryId": "a3", "mode": "subtree"}, format="json"
        ).status_code
        == 403
    )
    response = client.post(f"/api/sessions/{pk}/fork/", {"entryId": "a3", "position": "at"}, format="json")
    assert response.status_code == 201, response.data
    fork = ChatSession.objects.get(pk=response.data["session"]["id"])
    assert (fork.owner, fork.forked_from_id, fork.forked_from_entry, fork.forked_by) == (
        w.other,
        pk,
        "a3",
        w.other,
    )
    clone = client.post(f"/api/sessions/{pk}/clone/", {}, format="json")
    assert clone.status_code == 201
    assert ChatSession.objects.get(pk=clone.data["session"]["id"]).forked_from_entry == "a3"
    assert holder(link.raw_token).post(f"/api/sessions/{pk}/clone/", {}, format="json").status_code == 403


# -- live revocation ------------------------------------------------------------------------------------

HEADERS = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]


def cookie(account: Any) -> tuple[bytes, bytes]:
    from django.test import Client

    web = Client()
    web.force_login(account)
    return (b"cookie", f"sessionid={web.cookies['sessionid'].value}".encode())


def closes_after(path: str, headers: list[tuple[bytes, bytes]], revoke: Callable[[], Any]) -> int:
    async def scenario() -> int:
        ws = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await ws.connect(timeout=5)
        assert connected
        assert (await ws.receive_json_from(timeout=5))["type"] == "state"
        from channels.db import database_sync_to_async

        await database_sync_to_async(revoke)()
        while True:
            message = await ws.receive_output(timeout=5)
            if message["type"] == "websocket.close":
                return int(message["code"])

    return async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_revoking_a_link_closes_its_open_sockets_at_once(user: Callable[..., Any]) -> None:
    w = build_world(user)
    owner = APIClient()
    owner.force_login(w.owner)
    path = f"/ws/sessions/{w.session.pk}/?link={w.link.raw_token}"
    code = closes_after(path, HEADERS, lambda: owner.delete(f"/api/links/{w.link.pk}/"))
    assert code == 4403
    assert holder(w.link.raw_token).get(f"/api/sessions/{w.session.pk}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_unsharing_closes_team_members_sockets(user: Callable[..., Any]) -> None:
    w = build_world(user)
    owner = APIClient()
    owner.force_login(w.owner)
    path = f"/ws/sessions/{w.session.pk}/"
    code = closes_after(
        path,
        [*HEADERS, cookie(w.viewer)],
        lambda: owner.delete(f"/api/sessions/{w.session.pk}/shares/{w.team.pk}/"),
    )
    assert code == 4403


@pytest.mark.django_db(transaction=True)
def test_removing_a_member_closes_their_sockets(user: Callable[..., Any]) -> None:
    w = build_world(user)
    owner = APIClient()
    owner.force_login(w.owner)
    path = f"/ws/sessions/{w.session.pk}/"
    code = closes_after(
        path, [*HEADERS, cookie(w.viewer)], lambda: owner.delete(f"/api/teams/{w.team.pk}/members/viewer/")
    )
    assert code == 4403
