"""A person learns nothing of sessions outside their reach through pins, tags, archive, filters or bulk.

For each route, a session the caller cannot read answers exactly as an id that names nothing; every list
and count they get leaves such sessions out, whatever filter they give.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from organize.models import Archived, Pin, SavedFilter, SessionTag, Tag
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db

NOTHING = 987654321


def _client(who: Any) -> APIClient:
    client = APIClient()
    client.default_format = "json"
    client.force_login(who)
    return client


@pytest.fixture
def world(user: Callable[..., Any]) -> dict[str, Any]:
    """Olga's team Platform has a tagged, archived, pinned session; Vic reads only his own team's work."""
    olga, vic = user("olga"), user("vic")
    platform, other = Team.objects.create(name="Platform"), Team.objects.create(name="Other")
    TeamMembership.objects.create(team=platform, user=olga, role="owner")
    TeamMembership.objects.create(team=other, user=vic, role="owner")
    TeamMembership.objects.create(team=other, user=olga, role="viewer")
    data = session_file(small_tree(), {**HEADER, "id": "secret"})
    secret = services.import_jsonl(actor=olga, data=data, filename="s.jsonl").session
    services.rename_session(session=secret, name="secret plans", actor=olga)
    services.share_with_team(session=secret, team=platform, access="editor", actor=olga)
    tag = Tag.objects.create(team=platform, name="acquisition")
    SessionTag.objects.create(tag=tag, session=secret)
    Archived.objects.create(session=secret)
    Pin.objects.create(user=olga, session=secret)
    SavedFilter.objects.create(team=platform, name="deals", query=f"tag={tag.pk}")
    mine = services.import_jsonl(
        actor=vic, data=session_file(small_tree(), {**HEADER, "id": "mine"}), filename="m.jsonl"
    ).session
    return {"vic": _client(vic), "secret": secret, "tag": tag, "platform": platform, "mine": mine}


def _ids_out(response: Any) -> str:
    return re.sub(r"\d+", "N", response.content.decode())


def _same(client: APIClient, method: str, hidden: str, nothing: str, body: Any = None) -> None:
    a = getattr(client, method)(hidden, body) if body is not None else getattr(client, method)(hidden)
    b = getattr(client, method)(nothing, body) if body is not None else getattr(client, method)(nothing)
    # Each answer names the id it was asked about; apart from that they are the same.
    assert (a.status_code, _ids_out(a)) == (b.status_code, _ids_out(b)), (hidden, a.content, b.content)
    assert a.status_code == 404


def test_every_session_route_answers_a_hidden_session_as_one_that_does_not_exist(
    world: dict[str, Any],
) -> None:
    vic, secret, tag = world["vic"], world["secret"].pk, world["tag"].pk
    for suffix in ("pin/", "archive/", "tags/"):
        for method in ("post", "delete", "get"):
            if suffix != "tags/" and method == "get":
                continue
            body = {"tagId": tag} if suffix == "tags/" and method == "post" else None
            if suffix == "tags/" and method == "delete":
                _same(
                    vic, method, f"/api/sessions/{secret}/tags/{tag}/", f"/api/sessions/{NOTHING}/tags/{tag}/"
                )
                continue
            _same(vic, method, f"/api/sessions/{secret}/{suffix}", f"/api/sessions/{NOTHING}/{suffix}", body)
    # Another team's tag, team and saved filter are as unknown as ids of nothing.
    _same(vic, "patch", f"/api/tags/{tag}/", f"/api/tags/{NOTHING}/", {"name": "x"})
    _same(vic, "delete", f"/api/tags/{tag}/", f"/api/tags/{NOTHING}/")
    _same(vic, "get", f"/api/teams/{world['platform'].pk}/tags/", f"/api/teams/{NOTHING}/tags/")
    saved = SavedFilter.objects.get().pk
    _same(vic, "delete", f"/api/saved-filters/{saved}/", f"/api/saved-filters/{NOTHING}/")
    # Nothing changed for the people who may read it.
    assert Pin.objects.count() == Archived.objects.count() == SessionTag.objects.count() == 1


def test_no_filter_and_no_bulk_preview_reveals_a_hidden_session(world: dict[str, Any]) -> None:
    vic, secret, tag = world["vic"], world["secret"], world["tag"]
    for query in ("", "?archived=only", "?archived=include", "?pinned=1", f"?tag={tag.pk}", "?name=secret"):
        listed = vic.get(f"/api/sessions/{query}").json()["results"]
        assert secret.pk not in [s["id"] for s in listed], query
        page = vic.get(f"/{query}").content.decode()
        assert "secret plans" not in page and "acquisition" not in page and "deals" not in page, query
    assert [f["name"] for f in vic.get("/api/saved-filters/").json()["results"]] == []
    for action in ("archive", "restore", "delete", "tag", "untag", "share"):
        extra: dict[str, Any] = {}
        if action in ("tag", "untag"):
            own = Tag.objects.create(team=Team.objects.get(name="Other"), name=f"own-{action}")
            extra = {"tagId": own.pk}
        if action == "share":
            extra = {"teamId": Team.objects.get(name="Other").pk}
        hidden = vic.post("/api/sessions/bulk/", {"action": action, "sessions": [secret.pk], **extra})
        nothing = vic.post("/api/sessions/bulk/", {"action": action, "sessions": [NOTHING], **extra})
        assert hidden.json() == nothing.json(), action
        ran = vic.post(
            "/api/sessions/bulk/", {"action": action, "sessions": [secret.pk], "preview": False, **extra}
        )
        assert ran.json()["counts"]["change"] == 0
    assert (
        ChatSession.objects.filter(pk=secret.pk).exists() and Archived.objects.filter(session=secret).exists()
    )


def test_tag_counts_count_only_what_the_asker_reads(world: dict[str, Any], user: Callable[..., Any]) -> None:
    # A viewer of Platform who joined reads the shared session; once it is unshared the count drops.
    platform, secret = world["platform"], world["secret"]
    newcomer = user("nina")
    TeamMembership.objects.create(team=platform, user=newcomer, role="viewer")
    client = _client(newcomer)
    assert client.get(f"/api/teams/{platform.pk}/tags/").json()["results"][0]["count"] == 1
    services.unshare_with_team(session=secret, team=platform, actor=secret.owner)
    assert client.get(f"/api/teams/{platform.pk}/tags/").json()["results"][0]["count"] == 0
    assert client.get(f"/api/sessions/?tag={world['tag'].pk}&archived=include").json()["results"] == []
