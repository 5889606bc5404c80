"""Leaving a provider group ends the team membership at the next sign-in, and closes the live socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from django.contrib.auth import get_user_model
from websockets.exceptions import ConnectionClosed

from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree
from tests.live.servers import open_socket

from .conftest import OidcStack, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
FORBIDDEN, NARROWED = 4403, 4409


async def _first_state(ws: Any) -> None:
    assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "state"


async def _closed_within(ws: Any, seconds: float) -> int | None:
    try:
        async with asyncio.timeout(seconds):
            while True:
                await ws.recv()
    except ConnectionClosed:
        return ws.close_code
    except TimeoutError:
        raise AssertionError(f"the socket is still open {seconds}s after the sign-in") from None


def test_joining_a_group_opens_a_team_session_and_leaving_it_closes_the_socket(
    oidc_stack: OidcStack, user: Any
) -> None:
    owner = user("owner")
    team = Team.objects.create(name="Engineering", managed_by_provider=True)
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    data = session_file(small_tree(), {**HEADER, "id": "shared-with-eng"})
    stored = services.import_jsonl(actor=owner, data=data, filename="s.jsonl").session
    services.share_with_team(session=stored, team=team, access="viewer", actor=owner)
    page = f"{oidc_stack.piweb.base_url}/api/sessions/{stored.pk}/"

    oidc_stack.provider.person("erin", "erin@example.com", [])
    outsider, _ = sign_in(oidc_stack, "erin")
    assert outsider.get(page).status_code == 404

    oidc_stack.provider.person("erin", "erin@example.com", ["eng"])
    member, _ = sign_in(oidc_stack, "erin")
    assert member.get(page).status_code == 200
    erin = get_user_model().objects.get(username="erin")
    assert TeamMembership.objects.get(team=team, user=erin).role == "editor"
    cookie = f"sessionid={member.cookies['sessionid']}"

    async def scenario() -> int | None:
        ws = await open_socket(oidc_stack.piweb, stored.pk, cookie=cookie)
        await _first_state(ws)
        oidc_stack.provider.person("erin", "erin@example.com", [])
        # She signs in again elsewhere (another browser): the provider no longer lists the group.
        elsewhere = httpx.Client(follow_redirects=True, timeout=20)
        await asyncio.to_thread(sign_in, oidc_stack, "erin", client=elsewhere)
        return await _closed_within(ws, 5)

    assert asyncio.run(scenario()) == FORBIDDEN
    assert not TeamMembership.objects.filter(team=team, user=erin).exists()
    assert member.get(page).status_code == 404
    assert TeamMembership.objects.get(team=team, user=owner).role == "owner"  # others keep theirs


def test_a_role_lowered_by_the_groups_reloads_an_open_editor_read_only(
    oidc_stack: OidcStack, user: Any
) -> None:
    owner = user("owner")
    team = Team.objects.create(name="Engineering", managed_by_provider=True)
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    data = session_file(small_tree(), {**HEADER, "id": "edited-by-eng"})
    stored = services.import_jsonl(actor=owner, data=data, filename="s.jsonl").session
    services.share_with_team(session=stored, team=team, access="editor", actor=owner)

    oidc_stack.provider.person("jo", "jo@example.com", ["eng"])
    member, _ = sign_in(oidc_stack, "jo")
    cookie = f"sessionid={member.cookies['sessionid']}"

    async def scenario() -> int | None:
        ws = await open_socket(oidc_stack.piweb, stored.pk, cookie=cookie)
        await _first_state(ws)
        oidc_stack.provider.person("jo", "jo@example.com", ["eng-readers"])
        elsewhere = httpx.Client(follow_redirects=True, timeout=20)
        await asyncio.to_thread(sign_in, oidc_stack, "jo", client=elsewhere)
        return await _closed_within(ws, 5)

    assert asyncio.run(scenario()) == NARROWED
    jo = get_user_model().objects.get(username="jo")
    assert TeamMembership.objects.get(team=team, user=jo).role == "viewer"
    page = f"{oidc_stack.piweb.base_url}/api/sessions/{stored.pk}/"
    assert member.get(page).status_code == 200  # still reads
    csrf = member.cookies.get("csrftoken", "")
    renamed = member.patch(page, json={"name": "x"}, headers={"X-CSRFToken": csrf, "Referer": page})
    assert renamed.status_code == 403 and "CSRF" not in renamed.text, renamed.text
