"""Comments through the REST API: threads, who may do what, bad input, scope, export and search."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail

from actionlog.models import ActionLog
from discussion.domain.text import MAX_COMMENT_CHARS
from discussion.models import Comment, Notification
from sessions_app import services

from .conftest import Crew

pytestmark = pytest.mark.django_db


def post(crew: Crew, who: object, **body: object) -> object:
    return crew.client(who).post(crew.url, body, format="json")


def test_a_comment_and_its_reply_form_a_thread_rendered_through_the_message_sanitizer(crew: Crew) -> None:
    first = post(crew, crew.owner, entryId="a2", body="**why** this? <script>alert(1)</script>")
    assert first.status_code == 201, first.content
    reply = post(crew, crew.editor, entryId="a2", body="because", parentId=first.json()["id"])
    assert reply.status_code == 201, reply.content
    # A reply to a reply joins the same thread.
    again = post(crew, crew.viewer, entryId="a2", body="agreed", parentId=reply.json()["id"])
    assert again.json()["threadId"] == first.json()["id"]

    listing = crew.client(crew.viewer).get(crew.url, {"entryId": "a2"}).json()
    [thread] = listing["threads"]
    assert "<strong>why</strong>" in thread["html"]
    assert "<script>" not in thread["html"]
    assert [r["body"] for r in thread["replies"]] == ["because", "agreed"]
    assert thread["resolved"] is False
    counts = crew.client(crew.owner).get(crew.url).json()["counts"]
    assert counts == {"a2": {"comments": 3, "open": 1}}


def test_a_reply_must_be_on_its_threads_entry(crew: Crew) -> None:
    root = post(crew, crew.owner, entryId="a2", body="here").json()
    response = post(crew, crew.owner, entryId="u1", body="there", parentId=root["id"])
    assert response.status_code == 400
    assert "is on entry a2, not u1" in response.json()["error"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "The comment is empty."),
        ("  \n ", "The comment is empty."),
        ("x" * (MAX_COMMENT_CHARS + 1), "at most"),
    ],
)
def test_empty_or_oversized_comments_get_400_and_store_nothing(crew: Crew, body: str, message: str) -> None:
    response = post(crew, crew.owner, entryId="a2", body=body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert not Comment.objects.exists()


def test_a_comment_on_a_missing_entry_is_404(crew: Crew) -> None:
    response = post(crew, crew.owner, entryId="nope", body="hello?")
    assert response.status_code == 404
    assert "nope" in response.json()["error"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_mentioning_someone_who_cannot_read_is_refused_and_nobody_is_notified(crew: Crew) -> None:
    response = post(crew, crew.owner, entryId="a2", body="@eddie and @oscar, look")
    assert response.status_code == 400
    assert "@oscar" in response.json()["error"] and "can read this session" in response.json()["error"]
    assert "@eddie" not in response.json()["error"]
    assert not Comment.objects.exists() and not Notification.objects.exists()
    assert mail.outbox == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_a_mention_reaches_the_inbox_and_email_and_a_reply_reaches_the_thread(crew: Crew) -> None:
    root = post(crew, crew.owner, entryId="a2", body="@eddie what do you think?").json()
    assert root["mentions"] == ["eddie"]
    inbox = crew.client(crew.editor).get("/api/inbox/").json()
    assert inbox["unread"] == 1
    assert inbox["items"][0]["kind"] == "mention" and inbox["items"][0]["entryId"] == "a2"
    [email] = mail.outbox
    assert email.to == ["eddie@example.test"] and "olga mentioned you" in email.subject
    assert f"/sessions/{crew.session.pk}/#entry=a2" in email.body

    # Eddie answers: Olga (the thread's author) gets a reply line, but by default no email for replies.
    post(crew, crew.editor, entryId="a2", body="fine by me", parentId=root["id"])
    assert crew.client(crew.owner).get("/api/inbox/").json()["items"][0]["kind"] == "reply"
    assert len(mail.outbox) == 1

    read = crew.client(crew.editor).post("/api/inbox/read/", {"all": True}, format="json")
    assert read.json() == {"unread": 0}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_every_page_comes_with_the_unread_count(crew: Crew, client: Any) -> None:
    client.force_login(crew.editor)
    badge = re.compile(r'<span id="inbox-count" class="count"( hidden)?>(\d+)</span>')
    assert badge.search(client.get("/").content.decode()).groups() == (" hidden", "0")
    post(crew, crew.owner, entryId="a2", body="@eddie have a look")
    post(crew, crew.owner, entryId="a1", body="@eddie and here")
    for page in ("/", f"/sessions/{crew.session.pk}/", "/usage/"):
        html = client.get(page).content.decode()
        assert badge.search(html).groups() == (None, "2"), page
        assert 'aria-label="Inbox, 2 unread"' in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
@pytest.mark.parametrize(("choice", "emails"), [("all", 2), ("mentions", 1), ("none", 0)])
def test_each_user_chooses_which_notifications_come_by_email(
    crew: Crew, choice: str, emails: int, settings: Any
) -> None:
    settings.PIWEB_MAIL_BATCH_SECONDS = 0  # each line its own email: the choice alone decides
    crew.client(crew.editor).put("/api/inbox/settings/", {"email": choice}, format="json")
    root = post(crew, crew.editor, entryId="a2", body="a question").json()
    post(crew, crew.owner, entryId="a2", body="@eddie see this", parentId=root["id"])  # mention
    post(crew, crew.owner, entryId="a2", body="and this", parentId=root["id"])  # reply
    assert len(mail.outbox) == emails
    assert crew.client(crew.editor).get("/api/inbox/").json()["unread"] == 2  # the inbox has both anyway


def test_an_unknown_email_choice_is_400(crew: Crew) -> None:
    response = crew.client(crew.editor).put("/api/inbox/settings/", {"email": "sometimes"}, format="json")
    assert response.status_code == 400 and "email" in response.json()["error"]


def test_only_the_author_edits_or_deletes_and_a_deleted_comment_leaves_a_tombstone(crew: Crew) -> None:
    mine = post(crew, crew.editor, entryId="a2", body="first take").json()
    url = f"/api/comments/{mine['id']}/"
    assert crew.client(crew.owner).patch(url, {"body": "hijack"}, format="json").status_code == 403
    assert crew.client(crew.owner).delete(url).status_code == 403
    edited = crew.client(crew.editor).patch(url, {"body": "second take"}, format="json")
    assert edited.status_code == 200 and edited.json()["editedAt"] is not None
    assert crew.client(crew.editor).patch(url, {"body": ""}, format="json").status_code == 400
    assert crew.client(crew.editor).delete(url).status_code == 204

    [thread] = crew.client(crew.owner).get(crew.url, {"entryId": "a2"}).json()["threads"]
    assert thread["deleted"] is True and thread["body"] == "" and thread["html"] == ""
    # The text is kept for admins.
    assert Comment.objects.get(pk=mine["id"]).body == "second take"
    assert crew.client(crew.editor).delete(url).status_code == 404


def test_admins_see_a_deleted_comments_text(crew: Crew, user: object, client: object) -> None:
    mine = post(crew, crew.editor, entryId="a2", body="regrettable words").json()
    crew.client(crew.editor).delete(f"/api/comments/{mine['id']}/")
    staff = user("admin", is_staff=True, is_superuser=True)  # type: ignore[operator]
    client.force_login(staff)  # type: ignore[attr-defined]
    page = client.get(f"/admin/discussion/comment/{mine['id']}/change/")  # type: ignore[attr-defined]
    assert page.status_code == 200 and b"regrettable words" in page.content


def test_any_reader_resolves_and_reopens_a_thread(crew: Crew) -> None:
    root = post(crew, crew.owner, entryId="a2", body="open question").json()
    reply = post(crew, crew.editor, entryId="a2", body="answer", parentId=root["id"]).json()
    # Resolving through a reply resolves its thread.
    done = crew.client(crew.viewer).patch(f"/api/comments/{reply['id']}/", {"resolved": True}, format="json")
    assert done.status_code == 200 and done.json()["resolved"] is True and done.json()["resolvedBy"] == "vera"
    # A second resolve (someone else at the same moment) changes nothing and logs nothing.
    logged = ActionLog.objects.count()
    again = crew.client(crew.owner).patch(f"/api/comments/{root['id']}/", {"resolved": True}, format="json")
    assert again.status_code == 200 and again.json()["resolvedBy"] == "vera"
    assert ActionLog.objects.count() == logged
    assert crew.client(crew.owner).get(crew.url, {"open": "true"}).json()["counts"] == {}
    reopened = crew.client(crew.owner).patch(
        f"/api/comments/{root['id']}/", {"resolved": False}, format="json"
    )
    assert reopened.json()["resolved"] is False
    assert crew.client(crew.owner).get(crew.url, {"open": "true"}).json()["counts"] == {
        "a2": {"comments": 2, "open": 1}
    }


def test_whether_viewers_comment_is_the_teams_choice(crew: Crew) -> None:
    assert post(crew, crew.viewer, entryId="a2", body="may I?").status_code == 201
    setting = f"/api/teams/{crew.team.pk}/discussion/"
    assert crew.client(crew.viewer).get(setting).json() == {"viewersMayComment": True, "canChange": False}
    refused = crew.client(crew.editor).put(setting, {"viewersMayComment": False}, format="json")
    assert refused.status_code == 403  # only the team's owners decide
    changed = crew.client(crew.owner).put(setting, {"viewersMayComment": False}, format="json")
    assert changed.json() == {"viewersMayComment": False, "canChange": True}
    refused = post(crew, crew.viewer, entryId="a2", body="and now?")
    assert refused.status_code == 403 and "turned that off" in refused.json()["error"]
    assert crew.client(crew.viewer).get(crew.url).json()["canComment"] is False
    assert post(crew, crew.editor, entryId="a2", body="editors still may").status_code == 201
    # Reading and resolving stay open to viewers.
    root = Comment.objects.filter(parent=None).first()
    resolve = crew.client(crew.viewer).patch(f"/api/comments/{root.pk}/", {"resolved": True}, format="json")
    assert resolve.status_code == 200


def test_outsiders_and_link_holders_write_nothing(crew: Crew) -> None:
    assert post(crew, crew.outsider, entryId="a2", body="hi").status_code == 404
    link = services.create_share_link(session=crew.session, actor=crew.owner)
    response = crew.client(crew.outsider).post(
        crew.url, {"entryId": "a2", "body": "hi"}, format="json", HTTP_X_SHARE_TOKEN=link.raw_token
    )
    assert response.status_code in (403, 404)
    assert not Comment.objects.exists()


def test_a_path_link_sees_only_the_comments_on_its_path(crew: Crew) -> None:
    post(crew, crew.owner, entryId="a3", body="on the path")  # leaf: a3, path u1 a1 u3 a3
    post(crew, crew.owner, entryId="a2", body="on the other branch")
    link = services.create_share_link(session=crew.session, actor=crew.owner, scope="path")
    from rest_framework.test import APIClient

    anonymous = APIClient()
    counts = anonymous.get(crew.url, HTTP_X_SHARE_TOKEN=link.raw_token).json()["counts"]
    assert counts == {"a3": {"comments": 1, "open": 1}}
    assert anonymous.get(crew.url, {"entryId": "a2"}, HTTP_X_SHARE_TOKEN=link.raw_token).status_code == 404
    exported = anonymous.get(f"{crew.url}export/", HTTP_X_SHARE_TOKEN=link.raw_token).json()
    assert [t["body"] for t in exported["threads"]] == ["on the path"]
    found = anonymous.get(
        f"/api/sessions/{crew.session.pk}/search/", {"q": "path"}, HTTP_X_SHARE_TOKEN=link.raw_token
    ).json()
    assert [c["snippet"] for c in found["comments"]] == ["on the path"]


def test_comments_never_enter_the_session_file_and_export_on_their_own(crew: Crew) -> None:
    before = b"".join(
        crew.client(crew.owner).get(f"/api/sessions/{crew.session.pk}/export/").streaming_content
    )
    post(crew, crew.owner, entryId="a2", body="a remark")
    after = b"".join(
        crew.client(crew.owner).get(f"/api/sessions/{crew.session.pk}/export/").streaming_content
    )
    assert after == before
    exported = crew.client(crew.owner).get(f"{crew.url}export/")
    assert "attachment" in exported["Content-Disposition"]
    assert exported.json()["threads"][0]["body"] == "a remark"


def test_the_session_search_finds_comments(crew: Crew) -> None:
    post(crew, crew.owner, entryId="a2", body="the flaky Frobnicator again")
    found = crew.client(crew.viewer).get(f"/api/sessions/{crew.session.pk}/search/", {"q": "frobnicator"})
    [hit] = found.json()["comments"]
    assert hit["entryId"] == "a2" and hit["author"] == "olga"


def test_mention_autocomplete_lists_only_readers(crew: Crew) -> None:
    people = crew.client(crew.viewer).get(f"{crew.url}people/", {"q": ""}).json()
    assert [p["username"] for p in people] == ["eddie", "olga", "vera"]
    assert [
        p["username"] for p in crew.client(crew.viewer).get(f"{crew.url}people/", {"q": "@ed"}).json()
    ] == ["eddie"]


def test_counts_follow_the_nodes_asked_for(crew: Crew) -> None:
    post(crew, crew.owner, entryId="a2", body="one")
    post(crew, crew.owner, entryId="u1", body="two")
    counts = crew.client(crew.owner).get(crew.url, {"entries": "u1,a3"}).json()["counts"]
    assert counts == {"u1": {"comments": 1, "open": 1}}


def test_every_comment_change_is_in_the_action_log(crew: Crew) -> None:
    root = post(crew, crew.owner, entryId="a2", body="x").json()
    actions = list(ActionLog.objects.filter(action__startswith="comment").values_list("action", "detail"))
    assert actions == [
        ("comment_create", {"comment": root["id"], "entry": "a2", "thread": root["id"], "mentions": []})
    ]


def test_an_inbox_hides_lines_of_a_session_its_owner_can_no_longer_read(crew: Crew) -> None:
    post(crew, crew.owner, entryId="a2", body="@vera a secret plan")
    assert crew.client(crew.viewer).get("/api/inbox/").json()["unread"] == 1
    services.unshare_with_team(session=crew.session, team=crew.team, actor=crew.owner)
    inbox = crew.client(crew.viewer).get("/api/inbox/").json()
    assert inbox == {"unread": 0, "email": "mentions", "items": []}


def test_an_edit_notifies_only_the_people_it_newly_mentions(crew: Crew) -> None:
    mine = post(crew, crew.owner, entryId="a2", body="@eddie first").json()
    edited = crew.client(crew.owner).patch(
        f"/api/comments/{mine['id']}/", {"body": "@eddie and @vera"}, format="json"
    )
    assert edited.json()["mentions"] == ["eddie", "vera"]
    assert crew.client(crew.editor).get("/api/inbox/").json()["unread"] == 1
    assert crew.client(crew.viewer).get("/api/inbox/").json()["unread"] == 1
    refused = crew.client(crew.owner).patch(f"/api/comments/{mine['id']}/", {"body": "@oscar"}, format="json")
    assert refused.status_code == 400 and "@oscar" in refused.json()["error"]


def test_a_frozen_link_sees_the_comments_written_before_it_was_made(crew: Crew) -> None:
    from rest_framework.test import APIClient

    post(crew, crew.owner, entryId="a2", body="before the freeze")
    link = services.create_share_link(session=crew.session, actor=crew.owner, frozen=True)
    post(crew, crew.owner, entryId="a2", body="after the freeze")
    threads = (
        APIClient().get(crew.url, {"entryId": "a2"}, HTTP_X_SHARE_TOKEN=link.raw_token).json()["threads"]
    )
    assert [t["body"] for t in threads] == ["before the freeze"]
