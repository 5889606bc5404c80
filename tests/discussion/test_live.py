"""Comments arrive over the session socket, inside each socket's grant, and the inbox count follows."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from core import realtime
from discussion import services
from piweb.asgi import application
from sessions_app import services as session_services

from .conftest import Crew

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = b"http://127.0.0.1:8000"


def socket(pk: int, *, user: Any = None, link: str | None = None) -> WebsocketCommunicator:
    headers = [(b"host", b"127.0.0.1:8000"), (b"origin", ORIGIN)]
    if user is not None:
        client = Client()
        client.force_login(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    query = f"?link={link}" if link else ""
    return WebsocketCommunicator(application, f"/ws/sessions/{pk}/{query}", headers=headers)


async def next_of(ws: WebsocketCommunicator, kind: str, timeout: float = 5) -> dict[str, Any]:
    while True:
        message = await ws.receive_json_from(timeout=timeout)
        if message["type"] == kind:
            return message


def test_a_comment_reaches_members_live_and_the_mentioned_users_inbox_count(crew: Crew) -> None:
    path_link = session_services.create_share_link(session=crew.session, actor=crew.owner, scope="path")
    editor, viewer = socket(crew.session.pk, user=crew.editor), socket(crew.session.pk, user=crew.viewer)
    linked = socket(crew.session.pk, link=path_link.raw_token)

    async def scenario() -> None:
        for ws in (editor, viewer, linked):
            connected, _ = await ws.connect(timeout=5)
            assert connected
            await next_of(ws, "state")
        comment = await database_sync_to_async(services.post_comment)(
            actor=crew.owner, session=crew.session, entry_id="a2", body="@eddie see here"
        )
        await database_sync_to_async(realtime.flush)()
        for ws in (editor, viewer):
            event = await next_of(ws, "event")
            assert event["event"] == "comment"
            assert (event["entryId"], event["threadId"], event["change"]) == ("a2", comment.pk, "created")
        assert (await next_of(editor, "inbox"))["unread"] == 1
        # The viewer was not mentioned, and a path link hears nothing of comments.
        assert await viewer.receive_nothing(timeout=0.5)
        assert await linked.receive_nothing(timeout=0.5)
        await database_sync_to_async(services.mark_read)(actor=crew.editor, ids=None)
        await database_sync_to_async(realtime.flush)()
        assert (await next_of(editor, "inbox"))["unread"] == 0
        for ws in (editor, viewer, linked):
            await ws.disconnect()

    async_to_sync(scenario)()


def test_a_tree_link_hears_which_thread_changed_but_not_its_text(crew: Crew) -> None:
    tree_link = session_services.create_share_link(session=crew.session, actor=crew.owner)
    linked = socket(crew.session.pk, link=tree_link.raw_token)

    async def scenario() -> None:
        connected, _ = await linked.connect(timeout=5)
        assert connected
        await next_of(linked, "state")
        comment = await database_sync_to_async(services.post_comment)(
            actor=crew.owner, session=crew.session, entry_id="a2", body="private words"
        )
        await database_sync_to_async(realtime.flush)()
        event = await next_of(linked, "event")
        assert event == {
            "type": "event",
            "event": "comment",
            "session": crew.session.pk,
            "entryId": "a2",
            "threadId": comment.pk,
            "commentId": comment.pk,
            "change": "created",
        }
        await linked.disconnect()

    async_to_sync(scenario)()
