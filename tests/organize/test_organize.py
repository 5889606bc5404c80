"""Pins, team tags, archive, saved filters and bulk actions, through the REST API a page uses.

Each test acts as the people of a small team: the owner shares one session with the team, keeps one
private, and an outsider (in no team) must learn nothing of either.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from organize.models import SessionTag, Tag
from sessions_app import services
from sessions_app.models import ChatSession, SessionShare
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


@dataclass
class Crew:
    owner: Any
    editor: Any
    viewer: Any
    outsider: Any
    team: Team
    shared: ChatSession
    private: ChatSession

    def api(self, who: Any) -> APIClient:
        client = APIClient()
        client.default_format = "json"
        client.force_login(who)  # the list page reads the session cookie
        return client


def _session(owner: Any, pi_id: str, name: str) -> ChatSession:
    data = session_file(small_tree(), {**HEADER, "id": pi_id})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session
    services.rename_session(session=session, name=name, actor=owner)
    return session


@pytest.fixture
def crew(user: Callable[..., Any]) -> Crew:
    owner, editor, viewer, outsider = user("olga"), user("ed"), user("vic"), user("otto")
    team = Team.objects.create(name="Platform")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=editor, role="editor")
    TeamMembership.objects.create(team=team, user=viewer, role="viewer")
    shared = _session(owner, "shared", "billing refactor")
    services.share_with_team(session=shared, team=team, access="editor", actor=owner)
    private = _session(owner, "private", "my notes")
    return Crew(owner, editor, viewer, outsider, team, shared, private)


def _names(client: APIClient, query: str = "") -> list[str]:
    response = client.get(f"/api/sessions/{query}")
    assert response.status_code == 200, response.content
    return sorted(s["name"] for s in response.json()["results"])


def _page_names(client: APIClient, query: str = "") -> str:
    response = client.get(f"/{query}")
    assert response.status_code == 200
    return response.content.decode()


def _tag(crew: Crew, name: str = "billing", colour: str = "blue") -> int:
    response = crew.api(crew.editor).post(
        f"/api/teams/{crew.team.pk}/tags/", {"name": name, "colour": colour}
    )
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


# -- pins ------------------------------------------------------------------------------------------------


def test_a_pin_is_personal_and_filters_the_list(crew: Crew) -> None:
    viewer = crew.api(crew.viewer)
    assert viewer.post(f"/api/sessions/{crew.shared.pk}/pin/").json() == {"changed": True}
    assert viewer.post(f"/api/sessions/{crew.shared.pk}/pin/").json() == {"changed": False}
    assert _names(viewer, "?pinned=1") == ["billing refactor"]
    # The owner has pinned nothing: the viewer's pin is theirs alone.
    assert _names(crew.api(crew.owner), "?pinned=1") == []
    assert viewer.delete(f"/api/sessions/{crew.shared.pk}/pin/").json() == {"changed": True}
    assert _names(viewer, "?pinned=1") == []
    assert list(
        ActionLog.objects.filter(action__in=["pin", "unpin"]).order_by("pk").values_list("action", flat=True)
    ) == [
        "pin",
        "unpin",
    ]


def _page_order(client: APIClient, query: str = "") -> list[str]:
    return re.findall(r'class="session-link"[^>]*>([^<]+)<', _page_names(client, query))


def test_pinned_sessions_come_first_in_the_default_list(crew: Crew) -> None:
    owner = crew.api(crew.owner)
    assert _page_order(owner) == ["my notes", "billing refactor"]  # most recent first
    owner.post(f"/api/sessions/{crew.shared.pk}/pin/")
    assert _page_order(owner) == ["billing refactor", "my notes"]
    # Another sort is kept as asked.
    assert _page_order(owner, "?sort=created") == ["my notes", "billing refactor"]
    assert _page_order(crew.api(crew.editor)) == ["billing refactor"]


def test_nobody_pins_what_they_cannot_read_nor_learns_it_exists(crew: Crew) -> None:
    outsider = crew.api(crew.outsider)
    missing = outsider.post("/api/sessions/999999/pin/")
    hidden = outsider.post(f"/api/sessions/{crew.private.pk}/pin/")
    assert missing.status_code == hidden.status_code == 404
    assert missing.json().keys() == hidden.json().keys()
    assert crew.api(crew.viewer).post(f"/api/sessions/{crew.private.pk}/pin/").status_code == 404


# -- archive ---------------------------------------------------------------------------------------------


def test_archived_sessions_leave_the_default_list_stay_readable_and_come_back(crew: Crew) -> None:
    owner = crew.api(crew.owner)
    assert owner.post(f"/api/sessions/{crew.private.pk}/archive/").json() == {"changed": True}
    assert _names(owner) == ["billing refactor"]
    assert _names(owner, "?archived=only") == ["my notes"]
    assert _names(owner, "?archived=include") == ["billing refactor", "my notes"]
    # Searchable with the filter, and still readable: nothing was deleted.
    assert _names(owner, "?name=notes&archived=include") == ["my notes"]
    assert _names(owner, "?name=notes") == []
    assert "my notes" in _page_names(owner, "?q=notes&archived=include")
    assert "my notes" not in _page_names(owner, "?q=notes")
    assert owner.get(f"/api/sessions/{crew.private.pk}/entries/").status_code == 200
    assert "my notes" not in _page_names(owner)
    assert "my notes" in _page_names(owner, "?archived=only")
    assert owner.delete(f"/api/sessions/{crew.private.pk}/archive/").json() == {"changed": True}
    assert _names(owner) == ["billing refactor", "my notes"]


def test_search_leaves_archived_sessions_out_unless_asked(crew: Crew) -> None:
    owner = crew.api(crew.owner)

    def found(query: str) -> list[str]:
        answer = owner.get(f"/api/search/?q=question{query}")
        assert answer.status_code == 200, answer.content
        return sorted(s["title"] for s in answer.json()["sessions"])

    assert found("") == ["billing refactor", "my notes"]
    assert owner.post(f"/api/sessions/{crew.private.pk}/archive/").status_code == 200
    assert found("") == ["billing refactor"]
    assert found("&archived=include") == ["billing refactor", "my notes"]
    assert found("&archived=only") == ["my notes"]


def test_only_writers_archive(crew: Crew) -> None:
    assert crew.api(crew.viewer).post(f"/api/sessions/{crew.shared.pk}/archive/").status_code == 403
    assert crew.api(crew.outsider).post(f"/api/sessions/{crew.shared.pk}/archive/").status_code == 404
    assert crew.api(crew.editor).post(f"/api/sessions/{crew.shared.pk}/archive/").status_code == 200
    assert _names(crew.api(crew.viewer)) == []
    assert _names(crew.api(crew.viewer), "?archived=only") == ["billing refactor"]


def test_a_bad_filter_value_is_a_clear_400(crew: Crew) -> None:
    owner = crew.api(crew.owner)
    assert owner.get("/api/sessions/?archived=sometimes").status_code == 400
    assert owner.get("/api/sessions/?tag=billing").status_code == 400


# -- tags ------------------------------------------------------------------------------------------------


def test_team_editors_manage_tags_and_viewers_cannot(crew: Crew) -> None:
    tag = _tag(crew)
    editor = crew.api(crew.editor)
    assert (
        editor.post(f"/api/teams/{crew.team.pk}/tags/", {"name": "Billing"}).status_code == 400
    )  # same name
    assert crew.api(crew.viewer).post(f"/api/teams/{crew.team.pk}/tags/", {"name": "x"}).status_code == 403
    assert crew.api(crew.outsider).post(f"/api/teams/{crew.team.pk}/tags/", {"name": "x"}).status_code == 404
    assert crew.api(crew.viewer).patch(f"/api/tags/{tag}/", {"name": "y"}).status_code == 403
    assert crew.api(crew.outsider).patch(f"/api/tags/{tag}/", {"name": "y"}).status_code == 404
    changed = editor.patch(f"/api/tags/{tag}/", {"name": "invoices", "colour": "green"}, format="json")
    assert changed.json()["name"] == "invoices" and changed.json()["colour"] == "green"
    assert editor.patch(f"/api/tags/{tag}/", {"colour": "plaid"}).status_code == 400
    assert editor.delete(f"/api/tags/{tag}/").status_code == 204
    assert not Tag.objects.exists()


def test_a_tag_goes_on_shared_sessions_and_filters_the_list(crew: Crew) -> None:
    billing, urgent = _tag(crew), _tag(crew, "urgent", "red")
    owner, viewer = crew.api(crew.owner), crew.api(crew.viewer)
    assert owner.post(f"/api/sessions/{crew.shared.pk}/tags/", {"tagId": billing}).json() == {"changed": True}
    # The private session is not shared with the team: its tags cannot go there.
    refused = owner.post(f"/api/sessions/{crew.private.pk}/tags/", {"tagId": billing})
    assert refused.status_code == 403
    assert "not shared" in refused.json()["error"]
    # A team viewer who may not change the session may not tag it either.
    assert viewer.post(f"/api/sessions/{crew.shared.pk}/tags/", {"tagId": urgent}).status_code == 403
    assert _names(viewer, f"?tag={billing}") == ["billing refactor"]
    assert _names(viewer, f"?tag={billing}&tag={urgent}") == []  # all given tags
    assert [t["name"] for t in viewer.get(f"/api/sessions/{crew.shared.pk}/tags/").json()["results"]] == [
        "billing"
    ]
    page = _page_names(viewer)
    assert f'href="/?tag={billing}"' in page and ">billing</a>" in page
    assert owner.delete(f"/api/sessions/{crew.shared.pk}/tags/{billing}/").json() == {"changed": True}
    assert _names(viewer, f"?tag={billing}") == []


def test_tags_and_their_counts_never_reveal_unreadable_sessions(crew: Crew, user: Callable[..., Any]) -> None:
    tag = _tag(crew)
    crew.api(crew.owner).post(f"/api/sessions/{crew.shared.pk}/tags/", {"tagId": tag})
    # Someone joins the team after the session stopped being shared with it: the tag stays on the
    # session, but the newcomer may not read it, so it is neither counted nor found for them.
    services.unshare_with_team(session=crew.shared, team=crew.team, actor=crew.owner)
    newcomer = user("nina")
    TeamMembership.objects.create(team=crew.team, user=newcomer, role="editor")
    client = crew.api(newcomer)
    assert client.get(f"/api/teams/{crew.team.pk}/tags/").json()["results"][0]["count"] == 0
    assert crew.api(crew.owner).get(f"/api/teams/{crew.team.pk}/tags/").json()["results"][0]["count"] == 1
    assert _names(client, f"?tag={tag}") == []
    assert client.post(f"/api/sessions/{crew.shared.pk}/tags/", {"tagId": tag}).status_code == 404
    # Another team's tags are not known: filtering by one finds nothing, as an unknown id does.
    outsider = crew.api(crew.outsider)
    assert _names(outsider, f"?tag={tag}") == _names(outsider, "?tag=999999") == []
    assert outsider.get(f"/api/teams/{crew.team.pk}/tags/").status_code == 404
    assert SessionTag.objects.count() == 1


# -- saved filters ---------------------------------------------------------------------------------------


def test_saved_filters_per_person_and_per_team(crew: Crew) -> None:
    viewer, editor = crew.api(crew.viewer), crew.api(crew.editor)
    mine = viewer.post("/api/saved-filters/", {"name": "pins", "query": "?pinned=1&page=3"}, format="json")
    assert mine.status_code == 201 and mine.json()["url"] == "/?pinned=1"
    body = {"name": "archived billing", "query": "q=billing&archived=only", "teamId": crew.team.pk}
    assert viewer.post("/api/saved-filters/", body, format="json").status_code == 403
    assert editor.post("/api/saved-filters/", body, format="json").status_code == 201
    assert sorted(f["name"] for f in viewer.get("/api/saved-filters/").json()["results"]) == [
        "archived billing",
        "pins",
    ]
    assert [f["name"] for f in editor.get("/api/saved-filters/").json()["results"]] == ["archived billing"]
    assert crew.api(crew.outsider).get("/api/saved-filters/").json()["results"] == []
    # A query that only encoding makes too long is refused, not cut.
    long = {"name": "long", "query": "q=" + "é" * 1500}
    assert viewer.post("/api/saved-filters/", long).status_code == 400
    page = _page_names(viewer)
    assert 'href="/?pinned=1"' in page and "archived billing" in page
    team_filter = next(f for f in viewer.get("/api/saved-filters/").json()["results"] if f["team"])
    assert viewer.delete(f"/api/saved-filters/{team_filter['id']}/").status_code == 403
    assert crew.api(crew.outsider).delete(f"/api/saved-filters/{mine.json()['id']}/").status_code == 404
    assert viewer.delete(f"/api/saved-filters/{mine.json()['id']}/").status_code == 204


# -- bulk actions ----------------------------------------------------------------------------------------


def _bulk(client: APIClient, **body: Any) -> Any:
    response = client.post("/api/sessions/bulk/", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_bulk_preview_changes_nothing_and_says_what_would(crew: Crew) -> None:
    editor = crew.api(crew.editor)
    services.share_with_team(session=crew.private, team=crew.team, access="viewer", actor=crew.owner)
    ids = [crew.shared.pk, crew.private.pk, 999999]
    plan = _bulk(editor, action="archive", sessions=ids)
    assert plan["counts"] == {"change": 1, "unchanged": 0, "refused": 1, "missing": 1, "failed": 0}
    assert plan["refused"][0]["name"] == "my notes" and "not change" in plan["refused"][0]["reason"]
    assert _names(editor) == ["billing refactor", "my notes"]  # a preview writes nothing
    before = ActionLog.objects.count()
    done = _bulk(editor, action="archive", sessions=ids, preview=False)
    assert done["done"] and done["counts"]["change"] == 1
    assert ActionLog.objects.count() == before + 1
    assert _names(editor) == ["my notes"]
    again = _bulk(editor, action="archive", sessions=ids)
    assert again["counts"]["unchanged"] == 1 and again["counts"]["change"] == 0


def test_a_bulk_selection_of_unreadable_sessions_reads_as_nothing(crew: Crew) -> None:
    outsider = crew.api(crew.outsider)
    hidden = _bulk(outsider, action="delete", sessions=[crew.shared.pk, crew.private.pk])
    nothing = _bulk(outsider, action="delete", sessions=[999998, 999999])
    assert hidden == nothing
    assert hidden["counts"]["missing"] == 2 and hidden["change"] == hidden["refused"] == []
    ran = _bulk(outsider, action="delete", sessions=[crew.shared.pk], preview=False)
    assert ran["counts"]["change"] == 0
    assert ChatSession.objects.filter(pk=crew.shared.pk).exists()


def test_bulk_tag_share_and_delete_each_leave_one_row_per_session(
    crew: Crew, user: Callable[..., Any]
) -> None:
    owner = crew.api(crew.owner)
    tag = _tag(crew)
    extra = _session(crew.owner, "extra", "third")
    ids = [crew.shared.pk, crew.private.pk, extra.pk]
    plan = _bulk(owner, action="tag", sessions=ids, tagId=tag)
    assert plan["counts"]["change"] == 1 and plan["counts"]["refused"] == 2
    shared = _bulk(owner, action="share", sessions=ids, teamId=crew.team.pk, access="editor", preview=False)
    assert shared["counts"] == {"change": 2, "unchanged": 1, "refused": 0, "missing": 0, "failed": 0}
    assert SessionShare.objects.filter(team=crew.team).count() == 3
    tagged = _bulk(owner, action="tag", sessions=ids, tagId=tag, preview=False)
    assert tagged["counts"]["change"] == 3
    assert ActionLog.objects.filter(action="tag_apply").count() == 3
    assert _names(crew.api(crew.viewer), f"?tag={tag}") == ["billing refactor", "my notes", "third"]
    # The editor may tag (they may change the shared sessions) but deletes only what they own: nothing.
    refused = _bulk(crew.api(crew.editor), action="delete", sessions=ids)
    assert refused["counts"]["refused"] == 3
    deleted = _bulk(owner, action="delete", sessions=[extra.pk], preview=False)
    assert deleted["counts"]["change"] == 1
    assert not ChatSession.objects.filter(pk=extra.pk).exists()
    # Another team's tag (or team) is not known to the outsider: 404, like a tag that does not exist.
    outsider = crew.api(crew.outsider)
    for body in ({"action": "tag", "tagId": tag}, {"action": "share", "teamId": crew.team.pk}):
        answer = outsider.post("/api/sessions/bulk/", {**body, "sessions": ids}, format="json")
        assert answer.status_code == 404


def test_the_pager_keeps_the_filters(crew: Crew) -> None:
    for i in range(51):
        session = services.create_session(actor=crew.owner, cwd="/w", name=f"extra {i:02}")
        services.share_with_team(session=session, team=crew.team, access="editor", actor=crew.owner)
    owner = crew.api(crew.owner)
    owner.post(f"/api/sessions/{crew.private.pk}/archive/")
    first = _page_names(owner, "?archived=include&sort=name")
    older = re.search(r'<a href="\?([^"]+)">Older', first)
    assert older is not None
    second = _page_names(owner, "?" + older.group(1).replace("&amp;", "&"))
    # 53 sessions by name: the archived one is on the second page, found because the filter was kept.
    assert "my notes" in second and "my notes" not in first
