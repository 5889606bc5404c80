"""Comments held to the standard of entries: secrets found and redacted, frozen links frozen, rights kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core import mail
from rest_framework.test import APIClient

from sessions_app import services

from .conftest import Crew
from .smtp import smtp_server

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def post(crew: Crew, who: object, **body: object) -> Any:
    return crew.client(who).post(crew.url, body, format="json")


def _findings(crew: Crew) -> dict[str, Any]:
    return crew.client(crew.owner).get(f"/api/sessions/{crew.session.pk}/secrets/").json()


# -- secrets ----------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_secret_in_a_comment_is_found_and_redact_all_removes_it_everywhere(crew: Crew) -> None:
    comment = post(crew, crew.editor, entryId="a2", body=f"@vera the key is {AWS_KEY}, rotate it").json()

    found = _findings(crew)
    ours = [f for f in found["findings"] if f["commentId"] == comment["id"]]
    assert [(f["kind"], f["entryId"], f["redacted"]) for f in ours] == [("aws-access-key", "a2", False)]
    assert found["open"] == 1
    # The session list's badge counts it too.
    badges = crew.client(crew.owner).get("/api/secrets/").json()["sessions"]
    assert {"session": crew.session.pk, "open": 1} in badges

    done = crew.client(crew.owner).post(
        f"/api/sessions/{crew.session.pk}/secrets/redact/", {"all": True}, format="json"
    )
    assert done.status_code == 200 and done.json()["redacted"] == 1

    owner = crew.client(crew.owner)
    thread = owner.get(crew.url, {"entryId": "a2"}).json()["threads"][0]
    assert AWS_KEY not in thread["body"] + thread["html"]
    assert "[REDACTED:aws-access-key]" in thread["body"]
    assert "rotate it" in thread["body"]
    exported = owner.get(f"{crew.url}export/").content.decode()
    assert AWS_KEY not in exported
    hits = owner.get(f"/api/sessions/{crew.session.pk}/search/", {"q": "AKIA"}).json()
    assert all(AWS_KEY not in json.dumps(hit) for hit in hits.get("comments", []))
    inbox = crew.client(crew.viewer).get("/api/inbox/").content.decode()
    assert AWS_KEY not in inbox
    assert _findings(crew)["open"] == 0


@pytest.mark.django_db(transaction=True)
def test_an_edited_comment_is_scanned_again_and_its_earlier_text_is_redacted_too(crew: Crew) -> None:
    comment = post(crew, crew.owner, entryId="a2", body=f"token {GITHUB_TOKEN}").json()
    link = services.create_share_link(session=crew.session, actor=crew.owner, frozen=True)
    edited = crew.client(crew.owner).patch(
        f"/api/comments/{comment['id']}/", {"body": f"better: {AWS_KEY}"}, format="json"
    )
    assert edited.status_code == 200
    # The findings follow the text: the old token's finding went with it, the new key's is open.
    kinds = [f["kind"] for f in _findings(crew)["findings"] if not f["redacted"]]
    assert kinds == ["aws-access-key"]

    crew.client(crew.owner).post(
        f"/api/sessions/{crew.session.pk}/secrets/redact/", {"all": True}, format="json"
    )
    # The frozen link shows the text of its moment, which held the token: redacted as well.
    frozen = APIClient().get(crew.url, {"entryId": "a2"}, HTTP_X_SHARE_TOKEN=link.raw_token).json()
    body = frozen["threads"][0]["body"]
    assert GITHUB_TOKEN not in body and body.startswith("token [REDACTED:")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_a_mention_holding_a_secret_is_mailed_with_the_secret_masked(crew: Crew, settings: Any) -> None:
    with smtp_server() as (port, received):
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5},
            }
        }
        assert post(crew, crew.owner, entryId="a2", body=f"@eddie use {AWS_KEY} for now").status_code == 201
        messages = received.wait(1)
    assert len(messages) == 1
    text = messages[0][1].get_payload(decode=True).decode()
    assert AWS_KEY not in text
    assert "use [REDACTED:aws-access-key] for now" in text


# -- frozen links and rights ------------------------------------------------------------------------------


def test_a_frozen_link_shows_a_comment_as_it_read_when_the_link_was_made(crew: Crew) -> None:
    comment = post(crew, crew.owner, entryId="a2", body="the plan is fine").json()
    link = services.create_share_link(session=crew.session, actor=crew.owner, frozen=True)
    owner = crew.client(crew.owner)
    url = f"/api/comments/{comment['id']}/"
    assert owner.patch(url, {"body": "the plan is wrong"}, format="json").status_code == 200
    assert owner.patch(url, {"resolved": True}, format="json").status_code == 200

    anonymous = APIClient()
    frozen = anonymous.get(crew.url, {"entryId": "a2"}, HTTP_X_SHARE_TOKEN=link.raw_token).json()
    thread = frozen["threads"][0]
    assert thread["body"] == "the plan is fine" and "fine" in thread["html"]
    assert thread["editedAt"] is None and thread["resolved"] is False
    counts = anonymous.get(crew.url, HTTP_X_SHARE_TOKEN=link.raw_token).json()["counts"]
    assert counts == {"a2": {"comments": 1, "open": 1}}
    exported = anonymous.get(f"{crew.url}export/", HTTP_X_SHARE_TOKEN=link.raw_token).content.decode()
    assert "wrong" not in exported and "the plan is fine" in exported
    search = f"/api/sessions/{crew.session.pk}/search/"
    assert anonymous.get(search, {"q": "wrong"}, HTTP_X_SHARE_TOKEN=link.raw_token).json()["comments"] == []
    then = anonymous.get(search, {"q": "fine"}, HTTP_X_SHARE_TOKEN=link.raw_token).json()["comments"]
    assert [hit["snippet"] for hit in then] == ["the plan is fine"]
    # The people of the session see it as it is now.
    now = owner.get(crew.url, {"entryId": "a2"}).json()["threads"][0]
    assert now["body"] == "the plan is wrong" and now["resolved"] is True


def test_a_viewer_who_lost_the_right_to_comment_cannot_edit_but_may_delete(crew: Crew) -> None:
    mine = post(crew, crew.viewer, entryId="a2", body="a viewer's note").json()
    crew.client(crew.owner).put(
        f"/api/teams/{crew.team.pk}/discussion/", {"viewersMayComment": False}, format="json"
    )

    vera = crew.client(crew.viewer)
    refused = vera.patch(f"/api/comments/{mine['id']}/", {"body": "changed anyway"}, format="json")
    assert refused.status_code == 403
    assert "may not comment" in refused.json()["error"]
    thread = vera.get(crew.url, {"entryId": "a2"}).json()["threads"][0]
    assert thread["body"] == "a viewer's note"
    assert vera.delete(f"/api/comments/{mine['id']}/").status_code == 204
    assert len(mail.outbox) == 0
