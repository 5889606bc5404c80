"""``GET /api/activity/`` and the page: my own actions, others' actions on my sessions, nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts_app import api_tokens
from actionlog.services import record_action
from core.actors import COMPACTION_WORKER
from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


def client_of(who: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=who)
    return client


def activity(who: Any, **query: Any) -> dict[str, Any]:
    response = client_of(who).get("/api/activity/", query)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def crew(user: Callable[..., Any]) -> dict[str, Any]:
    """Olga owns a session shared with Eddie's team; Oscar is a stranger with a session of his own."""
    olga, eddie, oscar = user("olga"), user("eddie"), user("oscar")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=olga, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=eddie, role=TeamMembership.Role.EDITOR)
    session = services.import_jsonl(actor=olga, data=session_file(small_tree())).session
    services.share_with_team(session=session, team=team, access="editor", actor=olga)
    theirs = services.import_jsonl(actor=oscar, data=session_file(small_tree())).session
    return {"olga": olga, "eddie": eddie, "oscar": oscar, "team": team, "session": session, "theirs": theirs}


def test_i_see_my_own_actions_and_a_teammates_action_on_my_session(crew: dict[str, Any]) -> None:
    session = crew["session"]
    services.rename_session(session=session, name="by eddie", actor=crew["eddie"])
    rows = activity(crew["olga"])["items"]
    actions = [(r["action"], r["actor"], r["mine"]) for r in rows]
    assert ("rename", "eddie", False) in actions
    assert ("share", "olga", True) in actions
    assert ("import", "olga", True) in actions
    renamed = next(r for r in rows if r["action"] == "rename")
    assert renamed["sessionId"] == session.pk and renamed["sessionOwned"] is True
    # Newest first.
    ids = [r["id"] for r in rows]
    assert ids == sorted(ids, reverse=True)


def test_a_worker_acting_on_my_session_is_listed_by_its_name(crew: dict[str, Any]) -> None:
    record_action(actor=COMPACTION_WORKER, action="compacted", session=crew["session"])
    [row] = activity(crew["olga"], action="compacted")["items"]
    assert row["actor"] == "compaction-worker" and row["actorKind"] == "system" and row["mine"] is False


def test_my_teammate_sees_only_their_own_rows_not_what_i_did(crew: dict[str, Any]) -> None:
    services.rename_session(session=crew["session"], name="by eddie", actor=crew["eddie"])
    rows = activity(crew["eddie"])["items"]
    assert {r["action"] for r in rows} == {"rename"}
    assert all(r["mine"] for r in rows)


def test_a_stranger_sees_none_of_mine_and_i_none_of_theirs(crew: dict[str, Any]) -> None:
    services.rename_session(session=crew["theirs"], name="oscar's", actor=crew["oscar"])
    olga_ids = {r["id"] for r in activity(crew["olga"])["items"]}
    oscar_rows = activity(crew["oscar"])["items"]
    assert olga_ids and oscar_rows
    assert not olga_ids & {r["id"] for r in oscar_rows}
    assert {r["sessionId"] for r in oscar_rows} == {crew["theirs"].pk}
    # Asking for the other's session by id is refused like a session that does not exist.
    refused = client_of(crew["oscar"]).get("/api/activity/", {"session": crew["session"].pk})
    assert refused.status_code == 404
    assert f"No session {crew['session'].pk}" in refused.json()["error"]


def test_my_own_rows_about_a_session_i_can_no_longer_read_are_gone(crew: dict[str, Any]) -> None:
    services.rename_session(session=crew["session"], name="by eddie", actor=crew["eddie"])
    assert activity(crew["eddie"])["items"]
    TeamMembership.objects.filter(user=crew["eddie"]).delete()
    assert activity(crew["eddie"])["items"] == []


def test_token_rows_never_show_the_token(crew: dict[str, Any]) -> None:
    _token, text = api_tokens.create_api_token(actor=crew["olga"], user=crew["olga"], name="laptop")
    [row] = activity(crew["olga"], action="token_create")["items"]
    assert row["detail"] == {"name": "laptop"}
    assert text[:8] not in str(row)


def test_filters_by_action_and_session(crew: dict[str, Any]) -> None:
    second = session_file(small_tree(), header={**HEADER, "id": "sess-2"})
    other = services.import_jsonl(actor=crew["olga"], data=second).session
    services.rename_session(session=other, name="second", actor=crew["olga"])
    renames = activity(crew["olga"], action="rename")["items"]
    assert [r["sessionId"] for r in renames] == [other.pk]
    first_only = activity(crew["olga"], session=crew["session"].pk)["items"]
    assert {r["action"] for r in first_only} == {"import", "share"}
    assert {r["sessionId"] for r in first_only} == {crew["session"].pk}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"action": "nonsense"}, "action"),
        ({"session": "abc"}, "session"),
        ({"before": "0"}, "before"),
        ({"limit": "1000"}, "limit"),
        ({"action": ""}, "action"),
    ],
)
def test_bad_queries_get_a_400_naming_the_parameter(
    crew: dict[str, Any], query: dict[str, str], field: str
) -> None:
    response = client_of(crew["olga"]).get("/api/activity/", query)
    assert response.status_code == 400
    assert field in response.json()["error"]


def test_pages_walk_back_through_every_row_once(crew: dict[str, Any]) -> None:
    for n in range(5):
        services.rename_session(session=crew["session"], name=f"name {n}", actor=crew["olga"])
    everything = [r["id"] for r in activity(crew["olga"], limit=200)["items"]]
    assert len(everything) == 7  # import, share, five renames
    seen: list[int] = []
    before = None
    while True:
        query: dict[str, Any] = {"limit": 3}
        if before is not None:
            query["before"] = before
        page = activity(crew["olga"], **query)
        assert len(page["items"]) <= 3
        seen += [r["id"] for r in page["items"]]
        before = page["nextBefore"]
        if before is None:
            break
    assert seen == everything


def test_signed_out_callers_are_refused(client: Any, crew: dict[str, Any]) -> None:
    assert APIClient().get("/api/activity/").status_code in (401, 403)
    page = client.get("/activity/")
    assert page.status_code == 302 and "/accounts/login/" in page["Location"]


def test_the_page_lists_my_rows_and_a_bad_filter_says_why(client: Any, crew: dict[str, Any]) -> None:
    services.rename_session(session=crew["session"], name="by eddie", actor=crew["eddie"])
    client.force_login(crew["olga"])
    html = client.get("/activity/").content.decode()
    assert "eddie" in html and "rename" in html
    # The filter form sends its empty fields: they filter nothing.
    only_shares = client.get("/activity/", {"action": "share", "session": ""})
    assert only_shares.status_code == 200
    assert only_shares.content.decode().count('data-action="share"') == 1
    assert 'data-action="rename"' not in only_shares.content.decode()
    bad = client.get("/activity/", {"action": "nonsense"})
    assert bad.status_code == 400
    assert "action" in bad.content.decode() and "not a valid choice" in bad.content.decode()


def test_a_link_holders_export_of_my_session_is_listed_without_the_link(crew: dict[str, Any]) -> None:
    link = services.create_share_link(session=crew["session"], actor=crew["olga"])
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    assert holder.get(f"/api/sessions/{crew['session'].pk}/export/").status_code == 200
    [row] = activity(crew["olga"], action="export")["items"]
    assert row["actorKind"] == "link" and row["mine"] is False
    assert link.raw_token not in str(row)
    # Link holders have no activity of their own.
    assert holder.get("/api/activity/").status_code in (401, 403)


def test_the_api_is_in_the_openapi_schema_with_its_filters(crew: dict[str, Any]) -> None:
    schema = client_of(crew["olga"]).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/activity/"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"action", "session", "before", "limit"}
