"""Teams: invitations need consent, answers never reveal accounts, and a team always keeps an owner."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from teams.models import TeamInvitation, TeamMembership


def _client(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def _team(owner: APIClient, name: str = "alpha") -> int:
    response = owner.post("/api/teams/", {"name": name}, format="json")
    assert response.status_code == 201 and response.json()["role"] == "owner"
    return int(response.json()["id"])


def test_an_invitation_answers_the_same_for_known_and_unknown_users(user: Any) -> None:
    owner = _client(user("owner"))
    user("bob")
    team = _team(owner)
    url = f"/api/teams/{team}/members/"
    known = owner.post(url, {"username": "bob", "role": "editor"}, format="json")
    unknown = owner.post(url, {"username": "nobody-here", "role": "editor"}, format="json")
    assert (
        (known.status_code, known.json())
        == (unknown.status_code, unknown.json())
        == (202, {"status": "invited"})
    )
    # Nobody was added: bob is only invited.
    assert not TeamMembership.objects.filter(team_id=team, user__username="bob").exists()


def test_a_member_joins_only_by_accepting(user: Any) -> None:
    owner = _client(user("owner"))
    bob_user = user("bob")
    bob = _client(bob_user)
    team = _team(owner)
    owner.post(f"/api/teams/{team}/members/", {"username": "bob", "role": "editor"}, format="json")
    assert bob.get("/api/teams/").json()["results"] == []
    pending = bob.get("/api/invitations/").json()["results"]
    assert pending == [
        {
            "id": pending[0]["id"],
            "team": {"id": team, "name": "alpha"},
            "role": "editor",
            "invitedBy": "owner",
        }
    ]
    # Another user cannot answer bob's invitation.
    intruder = _client(user("mallory"))
    assert intruder.post(f"/api/invitations/{pending[0]['id']}/accept/").status_code == 404
    joined = bob.post(f"/api/invitations/{pending[0]['id']}/accept/")
    assert joined.status_code == 200 and joined.json()["role"] == "editor"
    assert [t["name"] for t in bob.get("/api/teams/").json()["results"]] == ["alpha"]
    assert bob.get("/api/invitations/").json()["results"] == []


def test_a_declined_invitation_adds_nobody(user: Any) -> None:
    owner = _client(user("owner"))
    bob = _client(user("bob"))
    team = _team(owner)
    owner.post(f"/api/teams/{team}/members/", {"username": "bob", "role": "owner"}, format="json")
    invitation = bob.get("/api/invitations/").json()["results"][0]
    assert bob.post(f"/api/invitations/{invitation['id']}/decline/").status_code == 204
    assert not TeamInvitation.objects.exists()
    assert not TeamMembership.objects.filter(team_id=team, user__username="bob").exists()


def _with_member(user: Any, role: str) -> tuple[APIClient, APIClient, int]:
    owner_user, member_user = user("owner"), user("bob")
    owner = _client(owner_user)
    team = _team(owner)
    TeamMembership.objects.create(team_id=team, user=member_user, role=role)
    return owner, _client(member_user), team


def test_the_last_owner_can_neither_leave_nor_be_demoted(user: Any) -> None:
    owner, _, team = _with_member(user, "viewer")
    base = f"/api/teams/{team}/members/owner/"
    demoted = owner.patch(base, {"role": "editor"}, format="json")
    assert demoted.status_code == 409 and "last owner" in demoted.json()["error"]
    left = owner.delete(base)
    assert left.status_code == 409 and "last owner" in left.json()["error"]
    assert TeamMembership.objects.get(team_id=team, user__username="owner").role == "owner"


def test_with_a_second_owner_the_first_may_step_down_and_leave(user: Any) -> None:
    owner, bob, team = _with_member(user, "viewer")
    assert owner.patch(f"/api/teams/{team}/members/bob/", {"role": "owner"}, format="json").status_code == 200
    assert (
        owner.patch(f"/api/teams/{team}/members/owner/", {"role": "viewer"}, format="json").status_code == 200
    )
    assert owner.delete(f"/api/teams/{team}/members/owner/").status_code == 204
    assert bob.patch(f"/api/teams/{team}/members/bob/", {"role": "viewer"}, format="json").status_code == 409


def test_members_leave_by_themselves_but_only_owners_remove_others(user: Any) -> None:
    owner, bob, team = _with_member(user, "editor")
    user("carol")
    TeamMembership.objects.create(team_id=team, user=user("dave"), role="viewer")
    assert bob.delete(f"/api/teams/{team}/members/dave/").status_code == 403
    assert (
        owner.patch(f"/api/teams/{team}/members/dave/", {"role": "bogus"}, format="json").status_code == 400
    )
    assert owner.delete(f"/api/teams/{team}/members/dave/").status_code == 204
    assert bob.delete(f"/api/teams/{team}/members/bob/").status_code == 204
    assert list(TeamMembership.objects.filter(team_id=team).values_list("user__username", flat=True)) == [
        "owner"
    ]
