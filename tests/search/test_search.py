"""Search over message text: found where it is, for the people who may read it, kept by every write path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services, text_search
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file
from tests.factories import assistant_message as assistant
from tests.factories import user_message as user_msg

pytestmark = pytest.mark.django_db


def tool_result(entry_id: str, parent: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:08.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "timestamp": 3,
        },
    }


def stored(owner: Any, pi_id: str, entries: list[dict[str, Any]]) -> Any:
    data = session_file(entries, {**HEADER, "id": pi_id})
    return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session


def client_for(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def found(client: APIClient, q: str, **params: Any) -> dict[int, list[str | None]]:
    response = client.get("/api/search/", {"q": q, **params})
    assert response.status_code == 200, response.content
    return {s["id"]: [h["entryId"] for h in s["hits"]] for s in response.json()["sessions"]}


def test_hits_name_the_entries_that_match_and_open_the_tree_there(api_client: APIClient) -> None:
    session = stored(
        api_client.user,
        "s1",
        [
            user_msg("u1", None, "Please fix the flaky Websocket reconnect"),
            assistant("a1", "u1", "Looking at the reconnect logic now."),
            tool_result("t1", "a1", "ConnectionRefusedError: connection refused on port 6379"),
            user_msg("u2", "t1", "unrelated follow-up"),
        ],
    )
    assert found(api_client, "reconnect") == {session.pk: ["a1", "u1"]}  # newest first
    assert found(api_client, "WEBSOCKET") == {session.pk: ["u1"]}  # any case
    assert found(api_client, '"connection refused"') == {session.pk: ["t1"]}  # a phrase
    assert found(api_client, '"refused connection"') == {}  # the words, but not that phrase
    assert found(api_client, "reconnect -flaky") == {session.pk: ["a1"]}
    assert found(api_client, "nothing like this") == {}
    body = api_client.get("/api/search/", {"q": "6379"}).json()
    hit = body["sessions"][0]["hits"][0]
    assert hit["role"] == "toolResult" and "6379" in hit["snippet"]
    tree = api_client.get(f"/api/sessions/{session.pk}/tree/", {"around": hit["entryId"]}).json()
    assert any(item.get("id") == "t1" for item in tree["items"])


def test_only_readable_sessions_are_searched(user: Callable[..., Any]) -> None:
    owner, member, stranger = user("owner"), user("member"), user("stranger")
    session = stored(owner, "shared", [user_msg("u1", None, "quarterly zeppelin budget")])
    stored(stranger, "theirs", [user_msg("x1", None, "stranger zeppelin notes")])
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=member, role=TeamMembership.Role.VIEWER)
    assert found(client_for(member), "zeppelin") == {}
    services.share_with_team(session=session, team=team, access="viewer", actor=owner)
    assert found(client_for(member), "zeppelin") == {session.pk: ["u1"]}
    assert session.pk not in found(client_for(stranger), "zeppelin")
    assert found(client_for(owner), "zeppelin", session=session.pk) == {session.pk: ["u1"]}


def test_appends_and_grown_reimports_are_searchable_at_once(api_client: APIClient) -> None:
    entries = [user_msg("u1", None, "first words")]
    session = stored(api_client.user, "grow", entries)
    grown = [*entries, assistant("a1", "u1", "the grown tail mentions kumquat")]
    result = services.import_jsonl(
        actor=api_client.user, data=session_file(grown, {**HEADER, "id": "grow"}), filename="grow.jsonl"
    )
    assert (result.created, result.appended) == (False, 1)
    assert found(api_client, "kumquat") == {session.pk: ["a1"]}
    services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "message", "message": {"role": "user", "content": "marmalade", "timestamp": 1}}],
    )
    assert list(found(api_client, "marmalade")) == [session.pk]
    copy = services.fork_session(session=session, entry_id="u1", actor=api_client.user, position="at")
    assert found(api_client, "first words") == {copy.session.pk: ["u1"], session.pk: ["u1"]}


def test_each_session_gives_its_newest_hits_and_says_when_there_are_more(api_client: APIClient) -> None:
    chain = [user_msg("u0", None, "common word 0")]
    chain += [user_msg(f"u{i}", f"u{i - 1}", f"common word {i}") for i in range(1, 12)]
    busy = stored(api_client.user, "busy", chain)
    quiet = stored(api_client.user, "quiet", [user_msg("q1", None, "a common thing")])
    result = text_search.search_entries([quiet.pk, busy.pk], "common")
    assert result.session_ids == [quiet.pk, busy.pk]  # the caller's order
    assert [h.entry_id for h in result.hits[busy.pk]] == ["u11", "u10", "u9", "u8", "u7"]
    assert result.more == {busy.pk}
    body = api_client.get("/api/search/", {"q": "common"}).json()
    assert {s["id"]: s["moreHits"] for s in body["sessions"]} == {busy.pk: True, quiet.pk: False}


def test_a_query_without_words_is_refused_or_empty(api_client: APIClient) -> None:
    stored(api_client.user, "s", [user_msg("u1", None, "text")])
    assert api_client.get("/api/search/").status_code == 400
    assert "error" in api_client.get("/api/search/").json()
    assert found(api_client, "!!! ???") == {}
    assert api_client.get("/api/search/", {"q": "x" * 201}).status_code == 400


def test_with_many_sessions_the_newest_matching_ones_are_listed_however_rare_the_words(
    api_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions_app.api import search as search_api

    # Small numbers stand for thousands of sessions: a probe of 3 sessions per statement, a page of 4.
    monkeypatch.setattr(text_search, "FIRST_PROBE", 3)
    monkeypatch.setattr(text_search, "PROBE_CHUNK", 2)
    monkeypatch.setattr(text_search, "RARE_ROWS", 5)
    monkeypatch.setattr(search_api, "MAX_SESSIONS", 4)
    made = []
    for n in range(10):
        text = "routine deploy notes" + (" with the kumquat audit" if n in (1, 6, 8) else "")
        made.append(stored(api_client.user, f"many{n}", [user_msg(f"m{n}", None, text)]).pk)
    newest_first = made[::-1]
    rare = [pk for pk in newest_first if made.index(pk) in (1, 6, 8)]
    assert text_search.first_matching(newest_first, "kumquat") == (rare, False)
    assert text_search.first_matching(newest_first, "routine", enough=5) == (newest_first[:5], False)
    assert text_search.matching_sessions(newest_first, '"deploy notes"') == newest_first
    assert text_search.matching_sessions(newest_first, "nowhere") == []
    common = api_client.get("/api/search/", {"q": "routine"}).json()
    assert [s["id"] for s in common["sessions"]] == newest_first[:4] and common["moreSessions"] is True
    scarce = api_client.get("/api/search/", {"q": "kumquat"}).json()
    assert [s["id"] for s in scarce["sessions"]] == rare and scarce["moreSessions"] is False
