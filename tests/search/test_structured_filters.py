"""Structured filters of the session list: each narrows what the viewer may read, combines with the
others and with words, keeps to the address, and answers a bad value with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from agent.models import AgentRun
from discussion import services as discussion_services
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import assistant_message, session_file, tool_turn, user_message

pytestmark = pytest.mark.django_db

HEADER = {"type": "session", "version": 3, "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/w"}


def _answer(
    entry_id: str, parent: str, text: str, provider: str, model: str, dollars: float
) -> dict[str, Any]:
    usage = {
        "input": 1000,
        "output": 100,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 1100,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": dollars},
    }
    return assistant_message(entry_id, parent, text, provider=provider, model=model, usage=usage)


def _busy(pi_id: str) -> list[dict[str, Any]]:
    """A session that ran bash, labelled an entry "release", was compacted, and cost $2 on claude-x."""
    return [
        user_message("u1", None, "deploy the parser"),
        *tool_turn("c1", "u1", "bash", {"command": "make deploy"}),
        _answer("a1", "c1-r", "deployed", "anthropic", "claude-x", 2.0),
        {"type": "label", "id": "l1", "parentId": "a1", "timestamp": "2026-01-02T03:04:09.000Z",
         "targetId": "a1", "label": "release"},
        {"type": "compaction", "id": "k1", "parentId": "l1", "timestamp": "2026-01-02T03:04:10.000Z",
         "summary": "deployed the parser", "firstKeptEntryId": "a1", "tokensBefore": 5000},
    ]  # fmt: skip


def _quiet(pi_id: str) -> list[dict[str, Any]]:
    """A plain question answered for ten cents by gpt-q."""
    return [user_message("u1", None, "hello there"), _answer("a1", "u1", "hi", "openai", "gpt-q", 0.1)]


def _store(owner: Any, pi_id: str, entries: list[dict[str, Any]], name: str) -> ChatSession:
    data = session_file(entries, {**HEADER, "id": pi_id})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session
    return services.rename_session(session=session, name=name, actor=owner)


@pytest.fixture
def world(user: Callable[..., Any]) -> dict[str, Any]:
    ada, bob, eve = user(), user(), user()
    crew, secret_team = Team.objects.create(name="crew"), Team.objects.create(name="eve's own")
    TeamMembership.objects.create(team=crew, user=ada, role="owner")
    TeamMembership.objects.create(team=crew, user=bob, role="editor")
    TeamMembership.objects.create(team=secret_team, user=eve, role="owner")
    busy = _store(ada, "busy", _busy("busy"), "busy one")
    quiet = _store(ada, "quiet", _quiet("quiet"), "quiet one")
    bobs = _store(bob, "bobs", _quiet("bobs"), "bob's question")
    # Eve's session has everything every filter asks for; ada must never see it.
    eves = _store(eve, "eves", _busy("eves"), "eve's busy one")
    services.share_with_team(session=busy, team=crew, access="viewer", actor=ada)
    services.share_with_team(session=bobs, team=crew, access="viewer", actor=bob)
    services.share_with_team(session=eves, team=secret_team, access="viewer", actor=eve)
    AgentRun.objects.create(session=quiet, requested_by=ada, prompt="go", status="running")
    AgentRun.objects.create(session=eves, requested_by=eve, prompt="go", status="running")
    discussion_services.post_comment(actor=bob, session=bobs, entry_id="a1", body="is this right?")
    return {"ada": ada, "eve": eve, "crew": crew, "secret_team": secret_team, "busy": busy, "quiet": quiet,
            "bobs": bobs, "eves": eves}  # fmt: skip


def listed(account: Any, **params: Any) -> set[str]:
    client = APIClient()
    client.force_authenticate(account)
    response = client.get("/api/sessions/", params)
    assert response.status_code == 200, response.content
    return {s["name"] for s in response.json()["results"]}


def test_each_filter_narrows_to_what_its_index_says(world: dict[str, Any]) -> None:
    ada, crew = world["ada"], world["crew"]
    assert listed(ada) == {"busy one", "quiet one", "bob's question"}
    assert listed(ada, tool="bash") == {"busy one"}
    assert listed(ada, model="claude-x") == {"busy one"}
    assert listed(ada, model="openai/gpt-q") == {"quiet one", "bob's question"}
    assert listed(ada, provider="openai") == {"quiet one", "bob's question"}
    assert listed(ada, cost_min="1") == {"busy one"}
    assert listed(ada, cost_max="1") == {"quiet one", "bob's question"}
    assert listed(ada, label="release") == {"busy one"}
    assert listed(ada, state="compacted") == {"busy one"}
    assert listed(ada, state="running") == {"quiet one"}
    assert listed(ada, state="open-threads") == {"bob's question"}
    assert listed(ada, team=str(crew.pk)) == {"busy one", "bob's question"}
    assert listed(ada, owner="me") == {"busy one", "quiet one"}
    assert listed(ada, before="2000-01-01") == set()
    assert listed(ada, after="2000-01-01") == {"busy one", "quiet one", "bob's question"}


def test_filters_combine_with_each_other_and_with_words(world: dict[str, Any]) -> None:
    ada, crew = world["ada"], world["crew"]
    assert listed(ada, team=str(crew.pk), provider="openai") == {"bob's question"}
    assert listed(ada, owner="me", state=["compacted", "running"]) == set()  # states all hold at once
    client = Client()
    client.force_login(ada)
    page = client.get("/", {"q": "question", "provider": "openai", "cost_max": "5"}).content.decode()
    assert "bob&#x27;s question" in page and "quiet one" not in page and "busy one" not in page
    # The active filters show as chips, each linking to the list without it.
    assert 'id="active-filters"' in page and "Provider: openai" in page
    assert "?q=question&amp;cost_max=5" in page


def test_no_filter_reveals_a_session_or_team_outside_reach(world: dict[str, Any]) -> None:
    ada, eve = world["ada"], world["eve"]
    for params in (
        {"tool": "bash"},
        {"label": "release"},
        {"state": "compacted"},
        {"state": "running"},
        {"model": "claude-x"},
        {"cost_min": "1"},
        {"owner": eve.username},
    ):
        assert "eve's busy one" not in listed(ada, **params), params
    client = APIClient()
    client.force_authenticate(ada)
    theirs = client.get("/api/sessions/", {"team": world["secret_team"].pk})
    nowhere = client.get("/api/sessions/", {"team": 999999})
    assert theirs.status_code == nowhere.status_code == 400
    assert theirs.json() == nowhere.json()
    page = Client()
    page.force_login(ada)
    assert "eve&#x27;s own" not in page.get("/").content.decode()  # the team choices are ada's own


def test_a_bad_value_is_answered_with_the_reason(world: dict[str, Any]) -> None:
    client = APIClient()
    client.force_authenticate(world["ada"])
    cases = {
        "state": ("nope", "not a state"),
        "after": ("2026-13-01", "not a day"),
        "cost_min": ("lots", "not an amount"),
        "team": ("crew", "team's number"),
    }
    for name, (value, reason) in cases.items():
        response = client.get("/api/sessions/", {name: value})
        assert response.status_code == 400 and reason in response.content.decode(), (name, response.content)
    page = Client()
    page.force_login(world["ada"])
    answer = page.get("/", {"state": "nope"}).content.decode()
    assert 'id="search-error"' in answer and "not a state" in answer
