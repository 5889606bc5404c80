"""Whatever ends a socket's access closes it within 2 s, on a real daphne with Redis as the channel layer.

Each path is taken as a user or an operator would take it: the REST API over HTTP to the server, the
admin, a plain ORM save, a separate ``manage.py`` process, signing out, or the clock passing an expiry.
The socket that depended on what was revoked closes (and answers nothing more); a socket that did not
(another token, another browser, another member, another session) stays open and still answers ``sync``.

This process writes through the same Redis channel layer as the server, so what the admin or the ORM
commits here reaches the server's sockets the way a second web process's would.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from piweb import config
from sessions_app import services
from sessions_app.models import ApiToken, SessionShare, ShareLink
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree
from tests.faults.stack import ROOT, missing_tools

from .servers import AsgiServer, PrivateRedis, open_socket, running, server_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
LIMIT = 2.0
SIGNED_OUT, FORBIDDEN, NARROWED = 4401, 4403, 4409


@dataclass(slots=True)
class Stack:
    server: AsgiServer
    redis: PrivateRedis
    env: dict[str, str]


@pytest.fixture(scope="module")
def stack(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[Stack]:
    """One Redis and one daphne for the module (they start in seconds; each test commits for real)."""
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    logs = tmp_path_factory.mktemp("revocation")
    redis = PrivateRedis(logs)
    with django_db_blocker.unblock():
        env = server_env(redis.url)
    server = AsgiServer(env, logs)
    with running(redis, server):
        yield Stack(server, redis, env)


@pytest.fixture(autouse=True)
def same_layer(_tools: None, stack: Stack, settings: Any) -> None:
    """Announce what this process commits on the server's Redis, as another web process would."""
    settings.CHANNEL_LAYERS = config.channel_layers_config({"REDIS_URL": stack.redis.url}, base_dir=ROOT)


def token(user: Any, **fields: Any) -> str:
    return ApiToken.objects.create(user=user, **fields)[1]


def browser(user: Any) -> tuple[Client, str]:
    """Return a signed-in browser and the Cookie header its sockets send."""
    client = Client()
    client.force_login(user)
    return client, f"sessionid={client.cookies['sessionid'].value}"


def staff_browser(user: Callable[..., Any]) -> Client:
    client = Client()
    client.force_login(user("staff", is_staff=True, is_superuser=True))
    return client


def new_session(owner: Any, name: str) -> Any:
    data = session_file(small_tree(), {**HEADER, "id": name})
    return services.import_jsonl(actor=owner, data=data, filename=f"{name}.jsonl").session


async def opened(socket: Awaitable[ClientConnection]) -> ClientConnection:
    """Open a socket and read its first state message."""
    ws = await socket
    assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "state"
    return ws


async def closes_within(ws: ClientConnection, seconds: float = LIMIT) -> tuple[int | None, float]:
    """Wait for the server to close the socket; return its close code and the seconds it took.

    Nothing but the session's own deletion notice may arrive first: no event, no answer.
    """
    started = time.monotonic()
    received: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                received.append(json.loads(await ws.recv()))
    except ConnectionClosed:
        pass
    except TimeoutError:
        raise AssertionError(f"the socket is still open {seconds}s later; it received {received}") from None
    took = time.monotonic() - started
    assert all(m.get("event") == "session_deleted" for m in received), received
    # Closed for good: a sync is not answered.
    with pytest.raises(ConnectionClosed):
        await ws.send(json.dumps({"type": "sync", "seq": 0}))
        await asyncio.wait_for(ws.recv(), 1)
    return ws.close_code, took


async def still_open(*sockets: ClientConnection) -> None:
    """Each socket still answers ``sync`` with the session's state."""
    for ws in sockets:
        await ws.send(json.dumps({"type": "sync", "seq": 0}))
        async with asyncio.timeout(5):
            while json.loads(await ws.recv())["type"] != "state":
                pass
        assert ws.close_code is None
        await ws.close()


def act(work: Callable[[], Any]) -> Awaitable[Any]:
    """Run ``work`` (ORM, admin or HTTP calls) off the event loop, on this test's database connection."""
    return sync_to_async(work, thread_sensitive=True)()


def api(stack: Stack, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=stack.server.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=10
    )


# API tokens


def test_deleting_a_token_through_the_api_closes_its_sockets_only(
    stack: Stack, owner: Any, stored: Any
) -> None:
    revoked, kept = token(owner), token(owner)

    async def scenario() -> None:
        doomed = await opened(open_socket(stack.server, stored.pk, token=revoked))
        other = await opened(open_socket(stack.server, stored.pk, token=kept))
        with api(stack, kept) as http:
            response = await act(lambda: http.delete(f"/api/tokens/{revoked[:15]}/"))
        assert response.status_code == 204, response.text
        code, took = await closes_within(doomed)
        assert code == SIGNED_OUT and took <= LIMIT
        await still_open(other)

    async_to_sync(scenario)()


def test_deleting_a_token_in_the_admin_closes_its_sockets(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    revoked, kept = token(owner), token(owner)
    digest = ApiToken.objects.get(token_key=revoked[:15]).digest
    staff = staff_browser(user)

    def delete_in_admin() -> None:
        response = staff.post(f"/admin/sessions_app/apitoken/{digest}/delete/", {"post": "yes"})
        assert response.status_code == 302, response.content[:2000]

    async def scenario() -> None:
        doomed = await opened(open_socket(stack.server, stored.pk, token=revoked))
        other = await opened(open_socket(stack.server, stored.pk, token=kept))
        await act(delete_in_admin)
        code, took = await closes_within(doomed)
        assert code == SIGNED_OUT and took <= LIMIT
        await still_open(other)

    async_to_sync(scenario)()
    assert not ApiToken.objects.filter(digest=digest).exists()


def test_a_token_closes_its_sockets_when_it_expires(stack: Stack, owner: Any, stored: Any) -> None:
    short, kept = token(owner, expiry=timedelta(seconds=3)), token(owner)
    expires = ApiToken.objects.get(token_key=short[:15]).expiry

    async def scenario() -> None:
        doomed = await opened(open_socket(stack.server, stored.pk, token=short))
        other = await opened(open_socket(stack.server, stored.pk, token=kept))
        # Nothing happens but the clock.
        code, _ = await closes_within(doomed, 3 + LIMIT + 1)
        assert code == SIGNED_OUT
        assert timezone.now() - expires <= timedelta(seconds=LIMIT)
        await still_open(other)

    async_to_sync(scenario)()


# Users


def deactivate_by_save(account: Any) -> None:
    account.is_active = False
    account.save()


def deactivate_by_command(stack: Stack, account: Any) -> None:
    code = (
        "from django.contrib.auth import get_user_model; "
        f"u = get_user_model().objects.get(pk={account.pk}); u.is_active = False; u.save()"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=stack.env, check=True, timeout=60
    )


def deactivate_in_admin(staff: Client, account: Any) -> None:
    joined = timezone.localtime(account.date_joined)
    form = {
        "username": account.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        # is_active left out: the box is unticked.
        "date_joined_0": joined.strftime("%Y-%m-%d"),
        "date_joined_1": joined.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
    }
    response = staff.post(f"/admin/auth/user/{account.pk}/change/", form)
    assert response.status_code == 302, response.content[:3000]


@pytest.mark.parametrize("how", ["model save", "admin", "management command"])
def test_deactivating_a_user_closes_every_socket_of_theirs_only(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any, how: str
) -> None:
    member = user("member")
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=member)
    SessionShare.objects.create(session=stored, team=team)
    _, owner_cookie = browser(owner)
    _, member_cookie = browser(member)
    owner_token, member_token = token(owner), token(member)
    staff = staff_browser(user) if how == "admin" else None

    def deactivate() -> None:
        if how == "model save":
            deactivate_by_save(member)
        elif how == "admin":
            assert staff is not None
            deactivate_in_admin(staff, member)
        else:
            deactivate_by_command(stack, member)

    async def scenario() -> None:
        doomed = [
            await opened(open_socket(stack.server, stored.pk, cookie=member_cookie)),
            await opened(open_socket(stack.server, stored.pk, token=member_token)),
        ]
        others = [
            await opened(open_socket(stack.server, stored.pk, cookie=owner_cookie)),
            await opened(open_socket(stack.server, stored.pk, token=owner_token)),
        ]
        started = time.monotonic()
        await act(deactivate)
        acted = time.monotonic() - started
        for ws in doomed:
            code, took = await closes_within(ws)
            assert code == SIGNED_OUT and took <= LIMIT, (how, acted)
        await still_open(*others)

    async_to_sync(scenario)()


@pytest.mark.parametrize("how", ["admin", "model delete"])
def test_deleting_a_user_closes_their_sockets(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any, how: str
) -> None:
    member = user("member")
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=member)
    SessionShare.objects.create(session=stored, team=team)
    own = new_session(member, "own")
    _, member_cookie = browser(member)
    member_token, owner_token = token(member), token(owner)
    staff = staff_browser(user)

    def delete_user() -> None:
        if how == "model delete":
            member.delete()
            return
        response = staff.post(f"/admin/auth/user/{member.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302, response.content[:3000]

    async def scenario() -> None:
        doomed = [
            await opened(open_socket(stack.server, stored.pk, cookie=member_cookie)),
            await opened(open_socket(stack.server, stored.pk, token=member_token)),
            await opened(open_socket(stack.server, own.pk, token=member_token)),
        ]
        other = await opened(open_socket(stack.server, stored.pk, token=owner_token))
        await act(delete_user)
        for ws in doomed:
            code, took = await closes_within(ws)
            assert code in (SIGNED_OUT, FORBIDDEN) and took <= LIMIT
        await still_open(other)

    async_to_sync(scenario)()


# Browser sessions


def test_signing_out_closes_the_sockets_of_that_browser_only(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    leaving, leaving_cookie = browser(owner)
    _, staying_cookie = browser(owner)
    # Someone signed in who reads another owner's session through its link keeps reading it.
    reader = user("reader")
    reading, reader_cookie = browser(reader)
    link = services.create_share_link(session=stored, actor=owner)

    def sign_out() -> None:
        response = leaving.post("/accounts/logout/")
        assert response.status_code in (200, 302)

    async def scenario() -> None:
        doomed = [await opened(open_socket(stack.server, stored.pk, cookie=leaving_cookie)) for _ in range(2)]
        other = await opened(open_socket(stack.server, stored.pk, cookie=staying_cookie))
        linked = await opened(open_socket(stack.server, stored.pk, cookie=reader_cookie, link=link.raw_token))
        await act(sign_out)
        for ws in doomed:
            code, took = await closes_within(ws)
            assert code == SIGNED_OUT and took <= LIMIT
        await act(lambda: reading.post("/accounts/logout/"))
        await asyncio.sleep(1)  # well past when its announcement lands (tens of milliseconds)
        await still_open(other, linked)

    async_to_sync(scenario)()


def test_deleting_a_browser_session_row_closes_its_sockets(stack: Stack, owner: Any, stored: Any) -> None:
    _, cookie = browser(owner)
    _, staying_cookie = browser(owner)
    key = cookie.split("=", 1)[1]

    async def scenario() -> None:
        doomed = await opened(open_socket(stack.server, stored.pk, cookie=cookie))
        other = await opened(open_socket(stack.server, stored.pk, cookie=staying_cookie))
        # As ``clearsessions`` or an operator's shell would.
        await act(lambda: Session.objects.filter(session_key=key).delete())
        code, took = await closes_within(doomed)
        assert code == SIGNED_OUT and took <= LIMIT
        await still_open(other)

    async_to_sync(scenario)()


# Teams, shares, links and the session itself


def test_removing_a_member_or_downgrading_an_editor_closes_their_sockets(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    editor, viewer, bystander = user("editor"), user("viewer"), user("bystander")
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    TeamMembership.objects.create(team=team, user=bystander, role=TeamMembership.Role.VIEWER)
    SessionShare.objects.create(session=stored, team=team, access=SessionShare.Access.EDITOR)
    owner_key = token(owner)
    editor_key, viewer_key, bystander_key = token(editor), token(viewer), token(bystander)

    async def scenario() -> None:
        editor_ws = await opened(open_socket(stack.server, stored.pk, token=editor_key))
        viewer_ws = await opened(open_socket(stack.server, stored.pk, token=viewer_key))
        bystander_ws = await opened(open_socket(stack.server, stored.pk, token=bystander_key))
        with api(stack, owner_key) as http:
            members = f"/api/teams/{team.pk}/members/"
            response = await act(lambda: http.patch(f"{members}editor/", json={"role": "viewer"}))
            assert response.status_code == 200, response.text
            # The socket could write through its grant: it closes, and the page reloads as a viewer's.
            code, took = await closes_within(editor_ws)
            assert code == NARROWED and took <= LIMIT
            response = await act(lambda: http.delete(f"{members}viewer/"))
            assert response.status_code == 204, response.text
            code, took = await closes_within(viewer_ws)
            assert code == FORBIDDEN and took <= LIMIT
        await still_open(bystander_ws)
        # The downgraded editor may open a socket again, as a viewer.
        await still_open(await opened(open_socket(stack.server, stored.pk, token=editor_key)))

    async_to_sync(scenario)()


def test_unsharing_revoking_or_expiring_a_link_closes_its_sockets(
    stack: Stack, user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    member = user("member")
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=member)
    SessionShare.objects.create(session=stored, team=team)
    owner_key, member_key = token(owner), token(member)
    revoked = services.create_share_link(session=stored, actor=owner)
    expiring = services.create_share_link(
        session=stored, actor=owner, expires_at=timezone.now() + timedelta(seconds=4)
    )
    kept = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)

    async def scenario() -> None:
        member_ws = await opened(open_socket(stack.server, stored.pk, token=member_key))
        revoked_ws = await opened(open_socket(stack.server, stored.pk, link=revoked.raw_token))
        expiring_ws = await opened(open_socket(stack.server, stored.pk, link=expiring.raw_token))
        kept_ws = await opened(open_socket(stack.server, stored.pk, link=kept.raw_token))
        owner_ws = await opened(open_socket(stack.server, stored.pk, token=owner_key))
        with api(stack, owner_key) as http:
            response = await act(lambda: http.delete(f"/api/sessions/{stored.pk}/shares/{team.pk}/"))
            assert response.status_code == 204, response.text
            code, took = await closes_within(member_ws)
            assert code == FORBIDDEN and took <= LIMIT
            response = await act(lambda: http.delete(f"/api/links/{revoked.pk}/"))
            assert response.status_code == 204, response.text
            code, took = await closes_within(revoked_ws)
            assert code == FORBIDDEN and took <= LIMIT
        code, _ = await closes_within(expiring_ws, 4 + LIMIT + 1)
        assert code == FORBIDDEN
        assert timezone.now() - expiring.expires_at <= timedelta(seconds=LIMIT)
        await still_open(kept_ws, owner_ws)

    async_to_sync(scenario)()


def test_deleting_a_session_closes_its_sockets_after_saying_so(stack: Stack, owner: Any, stored: Any) -> None:
    other_session = new_session(owner, "other")
    key = token(owner)
    link = services.create_share_link(session=stored, actor=owner)

    async def scenario() -> None:
        doomed = [
            await opened(open_socket(stack.server, stored.pk, token=key)),
            await opened(open_socket(stack.server, stored.pk, link=link.raw_token)),
        ]
        other = await opened(open_socket(stack.server, other_session.pk, token=key))
        with api(stack, key) as http:
            response = await act(lambda: http.delete(f"/api/sessions/{stored.pk}/"))
        assert response.status_code == 204, response.text
        for ws in doomed:
            code, took = await closes_within(ws)
            assert code == FORBIDDEN and took <= LIMIT
        await still_open(other)

    async_to_sync(scenario)()


def test_the_server_log_is_clean(stack: Stack) -> None:
    """No revocation above made the server log an error."""
    log = Path(stack.server.service.log_path).read_text(errors="replace")
    assert "Traceback" not in log, log[-5000:]
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith("RedisPubSubChannelLayer")
