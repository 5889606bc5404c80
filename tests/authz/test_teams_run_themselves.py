"""Teams that run themselves: owners see and withdraw pending invitations, a default share for members'
new sessions (each member can opt a session out), and a team page's list of sessions with search."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.test import APIClient

from actionlog.models import ActionLog
from sessions_app import services
from sessions_app.models import SessionShare
from sync import services as sync_services
from sync.services import Cursor
from teams import services as team_services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree


def _client(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def _team(owner: Any, name: str = "alpha", **members: str) -> Team:
    team = team_services.create_team(actor=owner, name=name)
    for account, role in members.items():
        TeamMembership.objects.create(team=team, user_id=int(account.removeprefix("u")), role=role)
    return team


def _import(owner: Any, pi_id: str, **header: Any) -> Any:
    data = session_file(small_tree(), {**HEADER, "id": pi_id, **header})
    return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session


def test_owners_see_pending_invitations_and_withdraw_them(user: Any) -> None:
    owner_user, bob_user, member_user = user("owner"), user("bob"), user("member")
    team = _team(owner_user, **{f"u{member_user.pk}": "editor"})
    owner, bob, member = _client(owner_user), _client(bob_user), _client(member_user)
    owner.post(f"/api/teams/{team.pk}/members/", {"username": "bob", "role": "viewer"}, format="json")

    pending = owner.get(f"/api/teams/{team.pk}/invitations/")
    assert pending.status_code == 200
    [sent] = pending.json()["results"]
    assert (sent["username"], sent["role"], sent["team"]["name"], sent["invitedBy"]) == (
        "bob",
        "viewer",
        "alpha",
        "owner",
    )
    # Members who are not owners see neither the list nor a way to withdraw.
    assert member.get(f"/api/teams/{team.pk}/invitations/").status_code == 403
    assert member.delete(f"/api/teams/{team.pk}/invitations/{sent['id']}/").status_code == 403

    assert owner.delete(f"/api/teams/{team.pk}/invitations/{sent['id']}/").status_code == 204
    assert owner.get(f"/api/teams/{team.pk}/invitations/").json()["results"] == []
    assert bob.get("/api/invitations/").json()["results"] == []
    assert bob.post(f"/api/invitations/{sent['id']}/accept/").status_code == 404
    again = owner.delete(f"/api/teams/{team.pk}/invitations/{sent['id']}/")
    assert again.status_code == 404 and "Invitation not found" in again.json()["error"]
    row = ActionLog.objects.get(action="team_withdraw")
    assert (row.actor_name, row.team_label, row.detail["username"]) == ("owner", "alpha", "bob")


def test_an_invitee_sees_the_team_name(user: Any) -> None:
    owner_user, bob_user = user("owner"), user("bob")
    team = _team(owner_user, name="Platform crew")
    _client(owner_user).post(f"/api/teams/{team.pk}/members/", {"username": "bob"}, format="json")
    [invitation] = _client(bob_user).get("/api/invitations/").json()["results"]
    assert invitation["team"] == {"id": team.pk, "name": "Platform crew"}


def test_a_default_share_shares_members_new_sessions_and_a_member_can_opt_out(user: Any) -> None:
    owner_user, dev_user, reader_user = user("owner"), user("dev"), user("reader")
    team = _team(owner_user, **{f"u{dev_user.pk}": "editor", f"u{reader_user.pk}": "viewer"})
    owner, dev, reader = _client(owner_user), _client(dev_user), _client(reader_user)
    before = _import(dev_user, "before-the-setting")

    bad = owner.patch(f"/api/teams/{team.pk}/", {"defaultShare": "admin"}, format="json")
    assert bad.status_code == 400 and "defaultShare" in json.dumps(bad.json())
    assert dev.patch(f"/api/teams/{team.pk}/", {"defaultShare": "viewer"}, format="json").status_code == 403
    changed = owner.patch(f"/api/teams/{team.pk}/", {"defaultShare": "editor"}, format="json")
    assert changed.status_code == 200 and changed.json()["defaultShare"] == "editor"
    assert reader.get(f"/api/teams/{team.pk}/").json()["defaultShare"] == "editor"

    imported = _import(dev_user, "imported-after")
    header = json.dumps({**HEADER, "id": "synced-after"})
    lines = [json.dumps(v) for v in small_tree()]
    synced = sync_services.sync_lines(
        actor=dev_user,
        header_line=header,
        start=Cursor(0, 0, None),
        end_lines=len(lines),
        end_bytes=None,
        lines=lines,
        path="/home/dev/s.jsonl",
    ).session
    assert reader.get(f"/api/sessions/{imported.pk}/").status_code == 200
    assert reader.get(f"/api/sessions/{synced.pk}/").status_code == 200
    assert reader.get(f"/api/sessions/{before.pk}/").status_code == 404  # not retroactive
    assert SessionShare.objects.get(session=synced, team=team).access == "editor"
    logged = ActionLog.objects.filter(action="share", session=synced).get()
    assert logged.detail == {"access": "editor", "byDefault": True} and logged.actor_name == "dev"

    # The member opts the synced session out; syncing more of it does not share it again.
    assert dev.delete(f"/api/sessions/{synced.pk}/shares/{team.pk}/").status_code == 204
    more = json.dumps(
        {
            "type": "message",
            "id": "u9",
            "parentId": "a3",
            "timestamp": "2026-01-03T00:00:00.000Z",
            "message": {"role": "user", "content": "more", "timestamp": 9},
        }
    )
    sync_services.sync_lines(
        actor=dev_user,
        header_line=header,
        start=Cursor(len(lines), None, None),
        end_lines=len(lines) + 1,
        end_bytes=None,
        lines=[more],
        path="/home/dev/s.jsonl",
    )
    assert reader.get(f"/api/sessions/{synced.pk}/").status_code == 404
    # A session of someone outside the team is never shared with it.
    outsider = _import(user("outsider"), "outside")
    assert not SessionShare.objects.filter(session=outsider).exists()


def test_the_team_page_lists_the_teams_sessions_with_search(user: Any) -> None:
    owner_user, dev_user = user("owner"), user("dev")
    team = _team(owner_user, **{f"u{dev_user.pk}": "viewer"})
    other_team = _team(owner_user, name="beta")
    mine = _import(owner_user, "billing", cwd="/srv/billing")
    services.share_with_team(session=mine, team=team, access="viewer", actor=owner_user)
    services.rename_session(session=mine, name="Invoice rounding", actor=owner_user)
    theirs = _import(owner_user, "search")
    services.share_with_team(session=theirs, team=team, access="editor", actor=owner_user)
    elsewhere = _import(owner_user, "elsewhere", cwd="/srv/billing-too")
    services.share_with_team(session=elsewhere, team=other_team, access="viewer", actor=owner_user)
    _import(owner_user, "private", cwd="/srv/billing-private")

    dev = _client(dev_user)
    listed = dev.get(f"/api/teams/{team.pk}/sessions/")
    assert listed.status_code == 200
    assert {s["id"]: s["access"] for s in listed.json()["results"]} == {
        mine.pk: "viewer",
        theirs.pk: "editor",
    }
    found = dev.get(f"/api/teams/{team.pk}/sessions/", {"q": "billing"}).json()["results"]
    assert [s["id"] for s in found] == [mine.pk]
    assert [
        s["name"] for s in dev.get(f"/api/teams/{team.pk}/sessions/", {"q": "invoice"}).json()["results"]
    ] == ["Invoice rounding"]
    assert dev.get(f"/api/teams/{team.pk}/sessions/", {"q": "nothing-like-it"}).json()["results"] == []
    assert _client(user("stranger")).get(f"/api/teams/{team.pk}/sessions/").status_code == 404
    assert dev.get(f"/api/teams/{other_team.pk}/sessions/").status_code == 404
