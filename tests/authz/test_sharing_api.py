"""Teams, team shares and links through the API, as the owner and their collaborators see them."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from actionlog.models import ActionLog
from sessions_app.models import ChatSession

from .conftest import World


def test_the_creator_of_a_team_is_its_owner_and_manages_members(world: World, user: Any) -> None:
    newcomer = user("newcomer")
    alice = world.client("other")
    team = alice.post("/api/teams/", {"name": "alpha"}, format="json")
    assert team.status_code == 201 and team.data["role"] == "owner"
    url = f"/api/teams/{team.data['id']}/members/"
    assert alice.post(url, {"username": "newcomer", "role": "editor"}, format="json").status_code == 202
    listed = APIClient()
    listed.force_login(newcomer)
    invitation = listed.get("/api/invitations/").data["results"][0]
    assert listed.post(f"/api/invitations/{invitation['id']}/accept/").status_code == 200
    teams = listed.get("/api/teams/").data["results"]
    assert [(t["name"], t["role"]) for t in teams] == [("alpha", "editor")]
    # An editor of the team may not change its members.
    assert listed.post(url, {"username": "owner"}, format="json").status_code == 403
    assert alice.post("/api/teams/", {"name": "alpha"}, format="json").status_code == 400


def test_sharing_with_a_team_grants_its_role_and_unsharing_takes_it_away(world: World) -> None:
    owner, viewer = world.client("owner"), world.client("viewer")
    pk = world.session.pk
    assert owner.delete(f"/api/sessions/{pk}/shares/{world.team.pk}/").status_code == 204
    assert viewer.get(f"/api/sessions/{pk}/").status_code == 404
    shared = owner.post(
        f"/api/sessions/{pk}/shares/", {"teamId": world.team.pk, "access": "viewer"}, format="json"
    )
    assert shared.status_code == 201
    assert viewer.get(f"/api/sessions/{pk}/").data["canEdit"] is False
    # A viewer share leaves even the team's editors read-only.
    assert (
        world.client("editor").patch(f"/api/sessions/{pk}/", {"name": "x"}, format="json").status_code == 403
    )
    assert owner.get(f"/api/sessions/{pk}/shares/").data["results"][0]["access"] == "viewer"


def test_only_the_owner_shares_and_only_with_their_own_teams(world: World) -> None:
    pk = world.session.pk
    editor = world.client("editor")
    assert editor.post(f"/api/sessions/{pk}/links/", {}, format="json").status_code == 403
    other = world.client("other")
    team = other.post("/api/teams/", {"name": "outsiders"}, format="json").data
    owner = world.client("owner")
    assert owner.post(f"/api/sessions/{pk}/shares/", {"teamId": team["id"]}, format="json").status_code == 404


def test_links_are_created_listed_and_revoked_by_the_owner(world: World) -> None:
    owner = world.client("owner")
    pk = world.session.pk
    made = owner.post(
        f"/api/sessions/{pk}/links/",
        {"scope": "path", "entryId": "a2", "frozen": True, "expiresAt": "2099-01-01T00:00:00Z"},
        format="json",
    )
    assert made.status_code == 201
    assert made.data["url"].endswith(f"/s/{made.data['token']}/")
    assert made.data["frozenSeq"] == 3 and made.data["entryId"] == "a2"
    assert owner.post(f"/api/sessions/{pk}/links/", {"entryId": "nope"}, format="json").status_code == 404
    listed = owner.get(f"/api/sessions/{pk}/links/")
    # The list names the link by its prefix only: the token is shown once, at creation.
    assert made.data["token"] not in listed.content.decode()
    row = {link["id"]: link for link in listed.data["results"]}[made.data["id"]]
    assert made.data["token"].startswith(row["tokenPrefix"])
    assert row["state"] == "active" and "url" not in row and "token" not in row
    assert owner.delete(f"/api/links/{made.data['id']}/").status_code == 204
    revoked = {link["id"]: link for link in owner.get(f"/api/sessions/{pk}/links/").data["results"]}
    assert revoked[made.data["id"]]["revokedAt"] is not None
    assert revoked[made.data["id"]]["state"] == "revoked"


def test_a_team_viewer_forks_into_their_own_space_with_provenance(world: World) -> None:
    response = world.client("viewer").post(
        f"/api/sessions/{world.session.pk}/fork/", {"entryId": "a2", "position": "at"}, format="json"
    )
    assert response.status_code == 201
    fork = ChatSession.objects.get(pk=response.data["session"]["id"])
    assert (fork.owner, fork.forked_from, fork.forked_from_entry, fork.forked_by) == (
        world.viewer,
        world.session,
        "a2",
        world.viewer,
    )


def test_actions_are_logged_after_they_succeed(world: World) -> None:
    owner = world.client("owner")
    pk = world.session.pk
    owner.post(f"/api/sessions/{pk}/navigate/", {"targetId": "a2"}, format="json")
    owner.get(f"/api/sessions/{pk}/export/")
    owner.post(f"/api/sessions/{pk}/clone/", {}, format="json")
    world.client("viewer").post(f"/api/sessions/{pk}/navigate/", {"targetId": "u1"}, format="json")
    actions = list(ActionLog.objects.filter(session=world.session).values_list("action", "actor__username"))
    assert (
        ("navigate", "owner") in actions and ("export", "owner") in actions and ("clone", "owner") in actions
    )
    assert ("navigate", "viewer") not in actions


def test_browser_writes_need_the_csrf_token(world: World) -> None:
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(world.owner)
    url = f"/api/sessions/{world.session.pk}/labels/"
    assert browser.post(url, {"targetId": "u1", "label": "x"}, format="json").status_code == 403
    browser.get(f"/sessions/{world.session.pk}/")
    token = browser.cookies["csrftoken"].value
    ok = browser.post(url, {"targetId": "u1", "label": "x"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 201


def test_provider_keys_never_reach_the_api(world: World) -> None:
    run = world.client("owner").get(f"/api/runs/{world.run.public_id}/")
    assert run.status_code == 200 and "sk-secret" not in run.content.decode()
    listed = world.client("owner").get(f"/api/sessions/{world.session.pk}/runs/")
    assert "sk-secret" not in listed.content.decode()


def test_oversized_uploads_get_a_clear_413(world: World, settings: Any) -> None:
    settings.PIWEB_MAX_IMPORT_BYTES = 100
    body = b'{"type":"session","version":3,"id":"big","cwd":"/"}\n' + b" " * 200 + b"\n"
    response = world.client("owner").post(
        "/api/sessions/import/", data=body, content_type="application/x-ndjson"
    )
    assert response.status_code == 413 and "larger than 100 bytes" in response.data["error"]
