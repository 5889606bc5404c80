"""Revocation and expiry close open sockets within 2 s, whatever made them: the API, the admin, any ORM
save or delete, or the clock passing a link's expiry."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from piweb.asgi import application
from sessions_app import services
from sessions_app.models import SessionShare, ShareLink
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]
LIMIT = 2.0
BASE = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]


def seconds_until_closed(
    headers: list[tuple[bytes, bytes]], pk: int, act: Callable[[], Any]
) -> tuple[int, float]:
    """Open the socket, run ``act`` (in a worker thread), return the close code and the seconds it took."""

    async def scenario() -> tuple[int, float]:
        ws = WebsocketCommunicator(application, f"/ws/sessions/{pk}/", headers)
        assert (await ws.connect())[0]
        assert (await ws.receive_json_from(timeout=5))["type"] == "state"
        await database_sync_to_async(act)()
        started = time.monotonic()
        while True:
            message = await ws.receive_output(timeout=LIMIT + 3)
            if message["type"] == "websocket.close":
                return int(message["code"]), time.monotonic() - started

    return async_to_sync(scenario)()


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session


def link_headers(link: ShareLink) -> list[tuple[bytes, bytes]]:
    return [*BASE, (b"x-share-token", link.raw_token.encode())]


def test_revoking_through_the_api_closes_the_socket(owner: Any, stored: Any) -> None:
    link = services.create_share_link(session=stored, actor=owner)
    api = APIClient()
    api.force_login(owner)
    code, took = seconds_until_closed(
        link_headers(link), stored.pk, lambda: api.delete(f"/api/links/{link.pk}/")
    )
    assert code == 4403 and took <= LIMIT


def test_revoking_in_the_admin_closes_the_socket(user: Callable[..., Any], owner: Any, stored: Any) -> None:
    link = services.create_share_link(session=stored, actor=owner)
    staff = Client()
    staff.force_login(user("admin", is_staff=True, is_superuser=True))

    def revoke_in_admin() -> None:
        body = {"action": "revoke_links", "_selected_action": [str(link.pk)]}
        response = staff.post("/admin/sessions_app/sharelink/", body)
        assert response.status_code == 302, response.content[:2000]

    code, took = seconds_until_closed(link_headers(link), stored.pk, revoke_in_admin)
    assert code == 4403 and took <= LIMIT
    assert ShareLink.objects.get(pk=link.pk).revoked_at is not None


def test_an_orm_save_or_delete_closes_the_socket(owner: Any, stored: Any) -> None:
    saved = services.create_share_link(session=stored, actor=owner)
    deleted = services.create_share_link(session=stored, actor=owner)

    def revoke_by_save() -> None:
        saved.revoked_at = timezone.now()
        saved.save()

    code, took = seconds_until_closed(link_headers(saved), stored.pk, revoke_by_save)
    assert code == 4403 and took <= LIMIT
    code, took = seconds_until_closed(link_headers(deleted), stored.pk, deleted.delete)
    assert code == 4403 and took <= LIMIT


def test_a_link_closes_its_socket_when_it_expires(owner: Any, stored: Any) -> None:
    link = services.create_share_link(
        session=stored, actor=owner, expires_at=timezone.now() + timedelta(seconds=3)
    )
    code, took = seconds_until_closed(link_headers(link), stored.pk, lambda: None)
    # Opened about a second before expiry; nothing else happens, the clock alone closes it.
    assert code == 4403 and took <= 3 + LIMIT


def test_a_link_given_an_earlier_expiry_in_the_admin_closes_then(owner: Any, stored: Any) -> None:
    link = services.create_share_link(
        session=stored, actor=owner, expires_at=timezone.now() + timedelta(days=1)
    )

    def shorten() -> None:
        ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() + timedelta(seconds=1))
        # update() sends no signal; the next save() of the row (as the admin does) does.
        ShareLink.objects.get(pk=link.pk).save()

    code, took = seconds_until_closed(link_headers(link), stored.pk, shorten)
    assert code == 4403 and took <= 1 + LIMIT


def test_removing_a_member_or_a_share_by_orm_closes_their_sockets(
    user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    viewer, other = user("viewer"), user("other")
    team = Team.objects.create(name="t")
    membership = TeamMembership.objects.create(team=team, user=viewer)
    TeamMembership.objects.create(team=team, user=other)
    share = SessionShare.objects.create(session=stored, team=team)

    def cookie(account: Any) -> tuple[bytes, bytes]:
        client = Client()
        client.force_login(account)
        return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())

    code, took = seconds_until_closed([*BASE, cookie(viewer)], stored.pk, membership.delete)
    assert code == 4403 and took <= LIMIT
    code, took = seconds_until_closed([*BASE, cookie(other)], stored.pk, share.delete)
    assert code == 4403 and took <= LIMIT
