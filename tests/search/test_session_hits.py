"""Every hit of one session, in the order the tree is drawn, a page at a time, inside the viewer's scope;
and the compact list across sessions with each session's count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from core.actors import SystemActor
from sessions_app import services
from sessions_app.models import EntrySearch, ShareLink
from sessions_app.services import purging
from tests.factories import APPEND_ORDER, HEADER, TREE_ORDER, branched, session_file
from tests.factories import user_message as user_msg

pytestmark = pytest.mark.django_db


def store(owner: Any, entries: list[dict[str, Any]], pi_id: str = "hits") -> Any:
    data = session_file(entries, {**HEADER, "id": pi_id})
    return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session


def every_hit(client: APIClient, pk: int, q: str, *, limit: int = 5) -> tuple[list[str], int]:
    """Page through the whole hit list; return the entry ids in order and the total each page gave."""
    ids: list[str] = []
    totals = set()
    offset = 0
    while True:
        response = client.get(f"/api/sessions/{pk}/search/", {"q": q, "offset": offset, "limit": limit})
        assert response.status_code == 200, response.content
        body = response.json()
        totals.add(body["total"])
        assert body["offset"] == offset and not body["incomplete"]
        assert [h["index"] for h in body["hits"]] == list(range(offset, offset + len(body["hits"])))
        ids += [h["entryId"] for h in body["hits"]]
        if not body["hits"]:
            break
        offset += len(body["hits"])
    assert len(totals) == 1
    return ids, totals.pop()


def holder(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_SHARE_TOKEN=token)
    return client


def test_paging_reaches_every_hit_in_the_order_the_tree_is_drawn(api_client: APIClient) -> None:
    session = store(api_client.user, branched())
    ids, total = every_hit(api_client, session.pk, "needle", limit=5)
    assert total == 13 and len(ids) == 13  # far more than the five hits a session shows across sessions
    assert ids == TREE_ORDER
    # One page holds them all too; a page past the end is empty but still counts them.
    body = api_client.get(f"/api/sessions/{session.pk}/search/", {"q": "needle", "limit": 100}).json()
    assert [h["entryId"] for h in body["hits"]] == TREE_ORDER
    assert body["hits"][2] == {"index": 2, "entryId": "y1", "seq": 4, "type": "message", "role": "user"}
    past = api_client.get(f"/api/sessions/{session.pk}/search/", {"q": "needle", "offset": 50}).json()
    assert (past["hits"], past["total"]) == ([], 13)
    # Phrases and exclusions work as across sessions.
    assert every_hit(api_client, session.pk, '"needle on"')[0] == ["y1", "y3", "x1", "x2"]
    assert every_hit(api_client, session.pk, "needle -number")[0] == TREE_ORDER[:6]
    assert every_hit(api_client, session.pk, "kumquat") == ([], 0)


def test_the_list_follows_appends_at_once(api_client: APIClient) -> None:
    session = store(api_client.user, branched())
    assert every_hit(api_client, session.pk, "needle")[1] == 13  # listed (and cached) before the append
    message = {"role": "user", "content": "one more needle", "timestamp": 1}
    services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": message}]
    )
    ids, total = every_hit(api_client, session.pk, "needle")
    assert total == 14 and ids[:-1] == TREE_ORDER  # the new leaf comes last, below x9


def test_a_frozen_link_sees_no_hit_stored_after_its_freeze_and_the_tree_order_it_is_shown(
    user: Callable[..., Any],
) -> None:
    owner = user("owner")
    session = store(owner, branched())
    link = services.create_share_link(session=session, actor=owner, frozen=True)
    message = {"role": "user", "content": "a needle after the freeze", "timestamp": 1}
    services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": message}]
    )

    seen = holder(link.raw_token)
    ids, total = every_hit(seen, session.pk, "needle", limit=4)
    assert (ids, total) == (APPEND_ORDER, 13)
    # The order is the order of the tree the link is shown: its listing of every node.
    tree = seen.get(f"/api/sessions/{session.pk}/tree/").json()
    drawn = [item["id"] for item in tree["items"] if item.get("id") in set(ids)]
    assert drawn == ids
    owner_client = APIClient()
    owner_client.force_authenticate(user=owner)
    assert every_hit(owner_client, session.pk, "needle")[1] == 14


def test_a_path_link_sees_only_the_hits_on_its_path(user: Callable[..., Any]) -> None:
    owner = user("owner")
    session = store(owner, branched())
    link = services.create_share_link(session=session, actor=owner, scope=ShareLink.Scope.PATH)
    seen = holder(link.raw_token)
    ids, total = every_hit(seen, session.pk, "needle", limit=3)
    assert ids == ["u0", "a0", "x1", "x2", *(f"x{i}" for i in range(3, 10))]
    assert total == 11  # y1 and y3 are on another branch
    assert every_hit(seen, session.pk, '"needle on y"') == ([], 0)
    # The owner moving to the y branch and writing there changes nothing for the pinned path.
    services.navigate_without_summary(session=session, actor=session.owner, target_id="y3")
    message = {"role": "user", "content": "needle below y3", "timestamp": 1}
    services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": message}]
    )
    assert every_hit(seen, session.pk, "needle") == (ids, 11)


def test_a_revoked_link_and_strangers_get_nothing(user: Callable[..., Any]) -> None:
    owner, stranger = user("owner"), user("stranger")
    session = store(owner, branched())
    link = services.create_share_link(session=session, actor=owner)
    assert (
        holder(link.raw_token).get(f"/api/sessions/{session.pk}/search/", {"q": "needle"}).status_code == 200
    )
    services.revoke_share_link(link=link, actor=owner)
    response = holder(link.raw_token).get(f"/api/sessions/{session.pk}/search/", {"q": "needle"})
    assert response.status_code == 404 and "needle" not in response.content.decode()
    other = APIClient()
    other.force_authenticate(user=stranger)
    response = other.get(f"/api/sessions/{session.pk}/search/", {"q": "needle"})
    assert response.status_code == 404 and "x1" not in response.content.decode()


def test_bad_parameters_are_refused(api_client: APIClient) -> None:
    session = store(api_client.user, branched())
    url = f"/api/sessions/{session.pk}/search/"
    assert api_client.get(url).status_code == 400
    assert api_client.get(url, {"q": "needle", "offset": -1}).status_code == 400
    assert api_client.get(url, {"q": "needle", "limit": 0}).status_code == 400
    assert api_client.get(url, {"q": "x" * 201}).status_code == 400
    assert api_client.get(url, {"q": "!!!"}).json()["total"] == 0


def test_across_sessions_each_session_shows_a_few_hits_and_how_many_there_are(api_client: APIClient) -> None:
    busy = store(api_client.user, branched(), "busy")
    chain = [user_msg("m0", None, "needle 0")]
    chain += [user_msg(f"m{i}", f"m{i - 1}", f"needle {i}") for i in range(1, 130)]
    huge = store(api_client.user, chain, "huge")
    quiet = store(api_client.user, [user_msg("q1", None, "one needle")], "quiet")
    body = api_client.get("/api/search/", {"q": "needle"}).json()
    by_id = {s["id"]: s for s in body["sessions"]}
    assert list(by_id) == [quiet.pk, huge.pk, busy.pk]  # most recently updated first
    summary = {
        pk: (len(s["hits"]), s["hitCount"], s["hitCountCapped"], s["moreHits"]) for pk, s in by_id.items()
    }
    assert summary == {
        quiet.pk: (1, 1, False, False),
        huge.pk: (5, 100, True, True),
        busy.pk: (5, 13, False, True),
    }
    assert [h["entryId"] for h in by_id[busy.pk]["hits"]] == ["x9", "x8", "x7", "x6", "x5"]  # newest first
    assert all("needle" in h["snippet"] for h in by_id[busy.pk]["hits"])
    # The session's own list then reaches all of them.
    assert every_hit(api_client, huge.pk, "needle", limit=1000)[1] == 130


def test_search_rows_go_with_their_session(api_client: APIClient) -> None:
    session = store(api_client.user, branched())
    copy = services.fork_session(session=session, entry_id="x2", actor=api_client.user, position="at")
    assert every_hit(api_client, copy.session.pk, "needle")[0] == ["u0", "a0", "x1", "x2"]
    assert EntrySearch.objects.filter(session=session).count() == 14  # every entry with message text
    services.delete_session(session=session, actor=api_client.user)
    # Hidden at once from every search; its rows go with the purge.
    assert session.pk not in {
        s["id"] for s in api_client.get("/api/search/", {"q": "needle"}).json()["sessions"]
    }
    assert api_client.get(f"/api/sessions/{session.pk}/search/", {"q": "needle"}).status_code == 404
    purging.purge_session(session.pk, actor=SystemActor("tests"), batch=4)
    assert not EntrySearch.objects.filter(session_id=session.pk).exists()
    assert EntrySearch.objects.filter(session=copy.session).count() == 4  # the path to x2
