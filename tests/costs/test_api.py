"""Costs through the API: per message, per branch, per session, abandoned, per user and per team."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from compaction_app.models import CompactionRun
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import SessionShare
from teams import services as team_services
from teams.models import Team, TeamMembership
from tests.factories import assistant_message, session_file, user_message


def _answer(entry_id: str, parent: str, cost: float | None, model: str = "m", tokens: int = 100) -> dict:
    usage: dict[str, Any] = {"input": tokens, "output": 10, "cacheRead": 0, "cacheWrite": 0}
    if cost is not None:
        usage["cost"] = {"total": cost}
    return assistant_message(entry_id, parent, "ok", model=model, usage=usage)


def _branched() -> list[dict]:
    """u1 → a1 ($0.10) → u2 → a2 ($0.20); a1 → u3 → a3 ($0.40), the leaf. a2 is on an abandoned branch."""
    return [
        user_message("u1", None, "hello"),
        _answer("a1", "u1", 0.10),
        user_message("u2", "a1", "first"),
        _answer("a2", "u2", 0.20),
        user_message("u3", "a1", "second"),
        _answer("a3", "u3", 0.40),
    ]


def _client(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def _cost(client: APIClient, pk: int, **params: str) -> dict:
    answer = client.get(f"/api/sessions/{pk}/cost/", params)
    assert answer.status_code == 200, answer.content
    return answer.json()


@pytest.fixture
def owner(user: Any) -> Any:
    return user("ann")


@pytest.fixture
def session(owner: Any) -> Any:
    return services.import_jsonl(actor=owner, data=session_file(_branched())).session


def test_branch_session_and_abandoned_costs(owner: Any, session: Any) -> None:
    client = _client(owner)
    body = _cost(client, session.pk, entries="a1,a2,a3,u1")

    assert body["at"] == "a3"
    assert body["branch"]["cost"] == pytest.approx(0.50) and body["branch"]["messages"] == 2
    assert body["session"]["cost"] == pytest.approx(0.70) and body["session"]["messages"] == 3
    assert body["abandoned"]["cost"] == pytest.approx(0.20) and body["abandoned"]["messages"] == 1
    assert {k: v["cost"] for k, v in body["messages"].items()} == pytest.approx(
        {"a1": 0.10, "a2": 0.20, "a3": 0.40}
    )
    assert body["messages"]["a1"]["source"] == "recorded" and body["messages"]["a1"]["tokens"] == 110
    # Another node's branch; the abandoned cost stays that of the session's leaf.
    other = _cost(client, session.pk, at="u2")
    assert other["branch"]["cost"] == pytest.approx(0.10)
    assert other["abandoned"]["cost"] == pytest.approx(0.20)


def test_moving_the_leaf_abandons_the_branch_left(owner: Any, session: Any) -> None:
    services.set_leaf(session=session, entry_id="a2", actor=owner)
    body = _cost(_client(owner), session.pk)
    assert body["branch"]["cost"] == pytest.approx(0.30)
    assert body["abandoned"]["cost"] == pytest.approx(0.40)


def test_appends_are_priced_from_the_admin_when_pi_recorded_no_cost(owner: Any, session: Any) -> None:
    LLMProvider.objects.create(
        name="priced", base_url="http://x/v1", model_id="m", provider="p", cost_input=2.0, cost_output=10.0
    )
    # Through the REST append (the store's chain path), one answer with no cost, one with none priced.
    client = _client(owner)
    appended = client.post(
        f"/api/sessions/{session.pk}/append/",
        {"entries": [_answer("a4", "a3", None, tokens=1000), _answer("a5", "a4", None, model="free")]},
        format="json",
    )
    assert appended.status_code in (200, 201), appended.content
    body = _cost(client, session.pk, entries="a4,a5")

    priced = (1000 * 2.0 + 10 * 10.0) / 1_000_000
    assert body["messages"]["a4"] == {"cost": pytest.approx(priced), "source": "priced", "model": "p/m",
                                      "tokens": 1010}  # fmt: skip
    assert body["messages"]["a5"]["source"] == "unpriced" and body["messages"]["a5"]["cost"] == 0
    assert body["branch"]["cost"] == pytest.approx(0.50 + priced) and body["branch"]["messages"] == 4
    assert body["session"]["unpriced"] == 1
    assert body["abandoned"]["cost"] == pytest.approx(0.20)


def test_the_session_list_costs_and_my_usage(owner: Any, session: Any, user: Any) -> None:
    stranger = user("bob")
    theirs = services.import_jsonl(actor=stranger, data=session_file(_branched())).session
    client = _client(owner)

    listed = client.get("/api/usage/sessions/", {"ids": f"{session.pk},{theirs.pk}"}).json()["results"]
    assert list(listed) == [str(session.pk)]  # never another user's session
    assert listed[str(session.pk)]["cost"] == pytest.approx(0.70)

    mine = client.get("/api/usage/").json()
    assert mine["totals"]["cost"] == pytest.approx(0.70) and mine["sessions"] == 1
    assert mine["byModel"][0]["model"] == "p/m" and mine["days"][0]["day"] == "2026-01-02"
    assert _client(stranger).get("/api/usage/").json()["totals"]["cost"] == pytest.approx(0.70)


def test_my_usage_counts_the_summaries_a_model_wrote(owner: Any, session: Any) -> None:
    CompactionRun.objects.create(
        idempotency_key="k1", kind="compaction", session=session, reason="manual", model="p/summarizer",
        usage={"input": 50, "output": 5}, cost=0.05,
    )  # fmt: skip
    body = _client(owner).get("/api/usage/").json()
    assert body["totals"]["cost"] == pytest.approx(0.75) and body["totals"]["messages"] == 4
    by_model = {m["model"]: m["cost"] for m in body["byModel"]}
    assert by_model == pytest.approx({"p/m": 0.70, "p/summarizer": 0.05})


def test_a_deleted_session_stops_counting(owner: Any, session: Any) -> None:
    services.delete_session(session=session, actor=owner)
    assert _client(owner).get("/api/usage/").json()["totals"]["cost"] == 0


def test_a_teams_usage_counts_its_shared_sessions_only(owner: Any, session: Any, user: Any) -> None:
    # Issue 24: a member's whole history must not count; only what is shared with the team.
    big = [user_message("x1", None, "big"), _answer("x2", "x1", 100.0, tokens=73_000_000)]
    services.import_jsonl(actor=owner, data=session_file(big, {"type": "session", "version": 3,
                          "id": "other", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/"}))  # fmt: skip
    team = team_services.create_team(actor=owner, name="eng")
    viewer = user("vic")
    TeamMembership.objects.create(team=team, user=viewer, role="viewer")
    SessionShare.objects.create(session=session, team=team)

    body = _client(owner).get(f"/api/teams/{team.pk}/usage/").json()
    assert body["totals"]["cost"] == pytest.approx(0.70) and body["totals"]["tokens"] == 330
    assert body["sessions"] == 1
    # Its members' usage is theirs: a viewer may not read the team's, a stranger does not see the team.
    assert _client(viewer).get(f"/api/teams/{team.pk}/usage/").status_code == 403
    assert _client(user("zed")).get(f"/api/teams/{team.pk}/usage/").status_code == 404
    assert Team.objects.count() == 1


def test_forks_and_clones_count_what_they_copied_once(owner: Any, session: Any, user: Any) -> None:
    # A fork or clone copies the messages with their usage: the calls were made (and counted) once.
    bob = user("bob")
    team = team_services.create_team(actor=owner, name="eng")
    TeamMembership.objects.create(team=team, user=bob, role="editor")
    SessionShare.objects.create(session=session, team=team)
    bobs = _client(bob)
    forked = bobs.post(
        f"/api/sessions/{session.pk}/fork/", {"entryId": "a3", "mode": "path+siblings"}, format="json"
    )
    assert forked.status_code == 201, forked.content
    fork = forked.json()["session"]["id"]
    cloned = _client(owner).post(f"/api/sessions/{session.pk}/clone/", {}, format="json")
    assert cloned.status_code == 201, cloned.content
    clone = cloned.json()["session"]["id"]

    mine = bobs.get("/api/usage/").json()
    assert mine["totals"]["cost"] == 0 and mine["totals"]["tokens"] == 0 and mine["totals"]["messages"] == 0
    assert mine["byModel"] == [] and mine["sessions"] == 0
    theirs = _client(owner).get("/api/usage/").json()  # the clone adds nothing to its owner's either
    assert theirs["totals"]["cost"] == pytest.approx(0.70) and theirs["totals"]["messages"] == 3
    assert theirs["sessions"] == 1

    # What the fork's owner runs there is theirs; the team counts each call once over all three.
    appended = bobs.post(
        f"/api/sessions/{fork}/append/", {"entries": [_answer("b1", "a3", 0.05)]}, format="json"
    )
    assert appended.status_code in (200, 201), appended.content
    mine = bobs.get("/api/usage/").json()
    assert mine["totals"]["cost"] == pytest.approx(0.05) and mine["totals"]["messages"] == 1
    SessionShare.objects.create(session_id=fork, team=team)
    SessionShare.objects.create(session_id=clone, team=team)
    shared = _client(owner).get(f"/api/teams/{team.pk}/usage/").json()
    assert shared["totals"]["cost"] == pytest.approx(0.75) and shared["totals"]["messages"] == 4
    assert shared["totals"]["tokens"] == 4 * 110

    # The fork's own page still shows what its branch holds, copies included.
    body = _cost(bobs, fork, at="b1")
    assert body["branch"]["cost"] == pytest.approx(0.55) and body["session"]["cost"] == pytest.approx(0.75)
    assert body["abandoned"]["cost"] == pytest.approx(0.20)  # a2, copied with the path's siblings
    listed = _client(owner).get("/api/usage/sessions/", {"ids": str(clone)}).json()["results"]
    assert listed[str(clone)]["cost"] == pytest.approx(0.50)  # the list's Cost column: the path it holds


def test_nobody_sees_another_users_session_cost(owner: Any, session: Any, user: Any) -> None:
    assert _client(user("eve")).get(f"/api/sessions/{session.pk}/cost/").status_code == 404
    assert APIClient().get(f"/api/sessions/{session.pk}/cost/").status_code in (401, 403)


def test_a_path_link_sees_its_paths_cost_only(owner: Any, session: Any) -> None:
    link = services.create_share_link(session=session, actor=owner, scope="path", entry_id="a2")
    anonymous = APIClient()
    body = anonymous.get(f"/api/sessions/{session.pk}/cost/", {"link": link.raw_token, "entries": "a1,a2,a3"})
    assert body.status_code == 200, body.content
    body = body.json()
    assert body["at"] == "a2" and body["branch"]["cost"] == pytest.approx(0.30)
    assert body["session"] is None and body["abandoned"] is None
    assert set(body["messages"]) == {"a1", "a2"}  # a3 lies off the link's path
    off_path = anonymous.get(f"/api/sessions/{session.pk}/cost/", {"link": link.raw_token, "at": "a3"})
    assert off_path.status_code == 404


@pytest.mark.parametrize(
    ("url", "params", "field"),
    [
        ("/api/usage/", {"days": "0"}, "days"),
        ("/api/usage/", {"days": "many"}, "days"),
        ("/api/usage/sessions/", {"ids": "1,two"}, "ids"),
        ("/api/usage/sessions/", {}, "ids"),
    ],
)
def test_bad_parameters_are_named(owner: Any, url: str, params: dict, field: str) -> None:
    answer = _client(owner).get(url, params)
    assert answer.status_code == 400 and field in answer.content.decode()


def test_too_many_entry_ids_are_refused(owner: Any, session: Any) -> None:
    ids = ",".join(f"e{i}" for i in range(501))
    answer = _client(owner).get(f"/api/sessions/{session.pk}/cost/", {"entries": ids})
    assert answer.status_code == 400 and "entries" in answer.content.decode()


def test_a_long_import_with_branches_sums_each_path(owner: Any) -> None:
    # Enough answers for the bulk path (COPY on PostgreSQL), on a main line with a side branch every
    # tenth turn; each branch's cost is the sum along its own path.
    entries, parent, on_leaf, total = [], None, 0.0, 0.0
    for turn in range(80):
        entries.append(user_message(f"u{turn}", parent, f"turn {turn}"))
        cost = round(0.001 * (turn + 1), 6)
        entries.append(_answer(f"a{turn}", f"u{turn}", cost))
        on_leaf, total = on_leaf + cost, total + cost
        if turn % 10 == 5:
            entries.append(user_message(f"s{turn}", f"a{turn}", "aside"))
            entries.append(_answer(f"b{turn}", f"s{turn}", 1.0))
            total += 1.0
        parent = f"a{turn}"
    stored = services.import_jsonl(actor=owner, data=session_file(entries)).session
    client = _client(owner)

    body = _cost(client, stored.pk, at="a79")
    assert body["branch"]["cost"] == pytest.approx(on_leaf) and body["branch"]["messages"] == 80
    assert body["session"]["cost"] == pytest.approx(total) and body["abandoned"]["cost"] == pytest.approx(8.0)
    side = _cost(client, stored.pk, at="b45")
    expected = sum(round(0.001 * (t + 1), 6) for t in range(46)) + 1.0
    assert side["branch"]["cost"] == pytest.approx(expected) and side["branch"]["messages"] == 47


def test_the_cost_request_reads_as_much_for_a_long_session_as_for_a_short_one(
    owner: Any, session: Any
) -> None:
    entries, parent = [], None
    for turn in range(300):
        entries.append(user_message(f"u{turn}", parent, f"turn {turn}"))
        entries.append(_answer(f"a{turn}", f"u{turn}", 0.01))
        parent = f"a{turn}"
    header = {
        "type": "session",
        "version": 3,
        "id": "long",
        "timestamp": "2026-01-02T03:04:05.000Z",
        "cwd": "/",
    }
    long = services.import_jsonl(actor=owner, data=session_file(entries, header)).session
    client = _client(owner)
    counts = []
    for stored, ids in ((session, "a1,a2,a3"), (long, "a297,a298,a299")):
        _cost(client, stored.pk, entries=ids)  # whatever a first request caches is not counted
        with CaptureQueriesContext(connection) as queries:
            body = _cost(client, stored.pk, entries=ids)
        counts.append(len(queries.captured_queries))
        assert len(body["messages"]) == 3
    assert counts[0] == counts[1]
    assert _cost(client, long.pk)["branch"]["cost"] == pytest.approx(3.0)


def test_recount_costs_prices_what_had_no_price(owner: Any, session: Any) -> None:
    client = _client(owner)
    client.post(
        f"/api/sessions/{session.pk}/append/",
        {"entries": [_answer("a4", "a3", None, tokens=1000)]},
        format="json",
    )
    assert _cost(client, session.pk, entries="a4")["messages"]["a4"]["source"] == "unpriced"
    # The same question asked before the recount: its answer (and the copy a browser keeps) go stale.
    before = client.get(f"/api/sessions/{session.pk}/cost/", {"entries": "a1,a4"})
    assert before.json()["messages"]["a4"]["source"] == "unpriced"
    LLMProvider.objects.create(
        name="later", base_url="http://x/v1", model_id="m", provider="p", cost_input=1.0
    )
    out = StringIO()

    call_command("recount_costs", session=[session.pk], stdout=out)

    body = _cost(client, session.pk, entries="a1,a4")
    assert body["messages"]["a4"]["source"] == "priced" and body["messages"]["a4"]["cost"] == pytest.approx(
        0.001
    )
    assert body["messages"]["a1"]["cost"] == pytest.approx(0.10)  # recorded costs stay
    assert body["branch"]["cost"] == pytest.approx(0.501) and body["session"]["unpriced"] == 0
    assert "4 assistant message(s)" in out.getvalue()
    again = client.get(
        f"/api/sessions/{session.pk}/cost/", {"entries": "a1,a4"}, HTTP_IF_NONE_MATCH=before["ETag"]
    )
    assert again.status_code == 200 and again.json()["messages"]["a4"]["source"] == "priced"
