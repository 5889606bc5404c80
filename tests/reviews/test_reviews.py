"""Reviews through the REST API: request, decide, withdraw, ask again; refusals; the outdated mark on a
branch and not its sibling; the inbox and mail; the queue, list filter and badge seen only by readers."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.test import Client

from actionlog.models import ActionLog
from discussion.models import NotificationPreference
from reviews.domain.status import overall
from reviews.models import Review
from sessions_app import services
from teams.models import Team, TeamMembership

from .conftest import Crew

pytestmark = pytest.mark.django_db


def statuses(crew: Crew, who: Any) -> list[str]:
    return [r["status"] for r in crew.client(who).get(crew.url).json()]


def test_overall_status_needs_every_approval_and_any_request_for_changes_wins() -> None:
    assert overall(["pending", "approved"]) == "pending"
    assert overall(["approved", "approved"]) == "approved"
    assert overall(["approved", "changes"]) == "changes"
    assert overall(["approved"], outdated=True) == "outdated"
    assert overall(["approved"], withdrawn=True, outdated=True) == "withdrawn"


def test_a_review_is_approved_only_when_every_reviewer_approved(crew: Crew) -> None:
    created = crew.request(entryId="a2", note="please look at the parser")
    assert created.status_code == 201, created.content
    review = created.json()
    assert review["status"] == "pending" and review["entryId"] == "a2" and review["team"]["name"] == "crew"
    assert [p["username"] for p in review["reviewers"]] == ["eddie", "vera"]

    first = crew.decide(crew.editor, review["id"], "approved", "looks right")
    assert first.status_code == 200, first.content
    assert first.json()["status"] == "pending"
    second = crew.decide(crew.viewer, review["id"], "approved")
    assert second.json()["status"] == "approved"
    notes = {p["username"]: p["note"] for p in second.json()["reviewers"]}
    assert notes == {"eddie": "looks right", "vera": ""}
    # A reviewer may change their mind: one request for changes makes the whole review so.
    changed = crew.decide(crew.viewer, review["id"], "changes", "rename the helper")
    assert changed.json()["status"] == "changes"
    assert statuses(crew, crew.owner) == ["changes"]
    rows = ActionLog.objects.filter(action__startswith="review_").order_by("pk")
    assert [(r.action, r.actor_name) for r in rows] == [
        ("review_request", "olga"),
        ("review_decide", "eddie"),
        ("review_decide", "vera"),
        ("review_decide", "vera"),
    ]


def test_only_named_reviewers_decide_and_only_the_requester_withdraws(crew: Crew) -> None:
    review = crew.request(reviewers=["vera"]).json()
    refused = crew.decide(crew.editor, review["id"], "approved")
    assert refused.status_code == 403
    assert "Only the people asked to review" in refused.json()["error"]
    assert crew.decide(crew.outsider, review["id"], "approved").status_code == 404
    assert crew.client(crew.viewer).post(f"/api/reviews/{review['id']}/withdraw/").status_code == 403
    withdrawn = crew.client(crew.owner).post(f"/api/reviews/{review['id']}/withdraw/")
    assert withdrawn.status_code == 200 and withdrawn.json()["status"] == "withdrawn"
    late = crew.decide(crew.viewer, review["id"], "approved")
    assert late.status_code == 409
    assert statuses(crew, crew.owner) == []  # withdrawn reviews leave the session page


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"reviewers": ["oscar"]}, 400, "@oscar cannot read this session"),
        ({"reviewers": ["nobody"]}, 400, "Nobody is named @nobody"),
        ({"reviewers": ["olga"]}, 400, "cannot review your own request"),
        ({"reviewers": []}, 400, "reviewers"),
        ({"reviewers": ["eddie"], "entryId": "missing"}, 404, "missing"),
    ],
)
def test_a_request_names_readers_of_an_existing_node(
    crew: Crew, body: dict, status: int, message: str
) -> None:
    response = crew.request(**body)
    assert response.status_code == status, response.content
    assert message in str(response.json())
    assert not Review.objects.exists()


def test_only_writers_may_request_and_outsiders_learn_nothing(crew: Crew) -> None:
    viewer = crew.request(crew.viewer, reviewers=["eddie"])
    assert viewer.status_code == 403
    assert "Only those who may change a session" in viewer.json()["error"]
    assert crew.request(crew.outsider, reviewers=["eddie"]).status_code == 404
    # An editor of the team may ask for review.
    assert crew.request(crew.editor, reviewers=["vera"]).status_code == 201


def test_the_reviewers_must_share_a_team_the_session_is_shared_with(crew: Crew, user: Any) -> None:
    other = Team.objects.create(name="elsewhere")
    TeamMembership.objects.create(team=other, user=crew.outsider, role=TeamMembership.Role.VIEWER)
    TeamMembership.objects.create(team=other, user=crew.owner, role=TeamMembership.Role.OWNER)
    services.share_with_team(session=crew.session, team=other, access="viewer", actor=crew.owner)
    split = crew.request(reviewers=["vera", "oscar"])
    assert split.status_code == 400 and "must all belong to one team" in split.json()["error"]
    assert crew.request(reviewers=["oscar"]).json()["team"]["name"] == "elsewhere"


@pytest.mark.django_db(transaction=True)
def test_a_new_entry_on_the_reviewed_branch_outdates_it_and_one_on_a_sibling_does_not(crew: Crew) -> None:
    branch = crew.request(entryId="a2").json()  # u1 → a1 → u2 → a2
    crew.decide(crew.editor, branch["id"], "approved")
    crew.append("a3", "s1")  # under a1's other child: a sibling branch
    assert Review.objects.get(pk=branch["id"]).status == "pending"
    crew.append("a2", "d1")  # below the reviewed node
    seen = crew.client(crew.owner).get(f"/api/reviews/{branch['id']}/").json()
    assert seen["status"] == "outdated" and seen["outdatedBy"] == "d1"
    refused = crew.decide(crew.viewer, branch["id"], "approved")
    assert refused.status_code == 409 and "asked again" in refused.json()["error"]
    # Asking again clears the mark and the decisions start over.
    again = crew.client(crew.owner).post(f"/api/reviews/{branch['id']}/request/")
    assert again.status_code == 200, again.content
    assert again.json()["status"] == "pending"
    assert {p["decision"] for p in again.json()["reviewers"]} == {"pending"}
    crew.append("d1", "d2")
    assert Review.objects.get(pk=branch["id"]).status == "outdated"


@pytest.mark.django_db(transaction=True)
def test_any_new_entry_outdates_a_review_of_the_whole_session(crew: Crew) -> None:
    whole = crew.request().json()
    decided = crew.request(reviewers=["eddie"]).json()
    crew.decide(crew.editor, decided["id"], "approved")
    crew.append("a3", "s1")
    assert set(Review.objects.values_list("status", flat=True)) == {"outdated"}
    assert whole["id"] != decided["id"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_reviewers_get_an_inbox_line_and_mail_and_the_requester_hears_the_decision(crew: Crew) -> None:
    NotificationPreference.objects.create(user=crew.viewer, email="none")
    review = crew.request(entryId="a2", note="the parser").json()
    inbox = crew.client(crew.editor).get("/api/inbox/").json()
    assert inbox["unread"] == 1
    [line] = inbox["items"]
    assert line["kind"] == "review" and line["author"] == "olga" and line["entryId"] == "a2"
    assert "asked you to review a branch" in line["snippet"]
    assert [m.to for m in mail.outbox] == [["eddie@example.test"]]  # vera asked for no mail
    assert "asked you to review" in mail.outbox[0].subject
    assert f"/sessions/{crew.session.pk}/#entry=a2" in mail.outbox[0].body

    crew.decide(crew.viewer, review["id"], "changes", "split it")
    [decided] = crew.client(crew.owner).get("/api/inbox/").json()["items"]
    assert decided["author"] == "vera" and "requested changes" in decided["snippet"]
    assert "split it" in decided["snippet"]
    assert mail.outbox[-1].to == ["olga@example.test"]


def test_the_queue_sorts_by_who_is_waiting(crew: Crew) -> None:
    waiting = crew.request(reviewers=["eddie"]).json()
    mine = crew.client(crew.editor).get("/api/reviews/").json()
    assert [r["id"] for r in mine["mine"]] == [waiting["id"]] and mine["others"] == []
    owner = crew.client(crew.owner).get(f"/api/reviews/?team={crew.team.pk}").json()
    assert owner["mine"] == [] and [r["id"] for r in owner["others"]] == [waiting["id"]]
    crew.decide(crew.editor, waiting["id"], "approved")
    done = crew.client(crew.editor).get("/api/reviews/").json()
    assert done["mine"] == [] and [r["status"] for r in done["done"]] == ["approved"]
    assert crew.client(crew.outsider).get(f"/api/reviews/?team={crew.team.pk}").status_code == 404


def test_a_reviewer_who_loses_access_no_longer_sees_or_decides(crew: Crew) -> None:
    review = crew.request(reviewers=["vera"]).json()
    TeamMembership.objects.filter(team=crew.team, user=crew.viewer).delete()
    client = crew.client(crew.viewer)
    assert client.get("/api/reviews/").json() == {"mine": [], "others": [], "done": []}
    assert client.get(f"/api/reviews/{review['id']}/").status_code == 404
    assert crew.decide(crew.viewer, review["id"], "approved").status_code == 404
    # Nor through the list's filter or badges.
    web = Client()
    web.force_login(crew.viewer)
    assert client.get("/api/sessions/?review=pending").json()["results"] == []
    assert "review pending" not in web.get("/").content.decode()


def test_a_withdrawn_share_hides_the_review_from_its_team(crew: Crew) -> None:
    review = crew.request(reviewers=["vera"]).json()
    web = Client()
    web.force_login(crew.viewer)
    before = web.get(f"/teams/{crew.team.pk}/reviews/").content.decode()
    row = f'<tr data-review="{review["id"]}">'
    assert row in before.split('id="queue-mine"')[1].split('id="queue-others"')[0]
    services.unshare_with_team(session=crew.session, team=crew.team, actor=crew.owner)
    assert crew.client(crew.viewer).get("/api/reviews/").json()["mine"] == []
    assert crew.decide(crew.viewer, review["id"], "approved").status_code == 404
    for page in (f"/teams/{crew.team.pk}/reviews/", "/reviews/"):
        assert row not in web.get(page).content.decode()


def test_the_list_filters_and_badges_by_review_status(crew: Crew) -> None:
    other = services.import_jsonl(
        actor=crew.owner,
        data=b'{"type":"session","version":3,"id":"two","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}\n',
    ).session
    services.share_with_team(session=other, team=crew.team, access="viewer", actor=crew.owner)
    review = crew.request(reviewers=["eddie"]).json()
    client = crew.client(crew.editor)
    ids = lambda query: [s["id"] for s in client.get(f"/api/sessions/?{query}").json()["results"]]  # noqa: E731
    assert ids("review=pending") == [crew.session.pk]
    assert ids("review=mine") == [crew.session.pk]
    assert crew.client(crew.viewer).get("/api/sessions/?review=mine").json()["results"] == []
    assert ids("review=approved") == []
    assert client.get("/api/sessions/?review=bogus").status_code == 400
    crew.decide(crew.editor, review["id"], "approved")
    assert ids("review=approved") == [crew.session.pk]
    web = Client()
    web.force_login(crew.editor)
    page = web.get("/?review=approved").content.decode()
    assert "badge-review-approved" in page and other.title not in page
    detail = web.get(f"/sessions/{crew.session.pk}/").content.decode()
    assert 'id="review-status"' in detail and 'id="reviews"' in detail


def test_a_link_visitor_sees_no_review_part(crew: Crew) -> None:
    crew.request(reviewers=["eddie"])
    link = services.create_share_link(session=crew.session, actor=crew.owner)
    page = Client().get(f"/s/{link.raw_token}/").content.decode()
    assert 'id="reviews"' not in page and "review pending" not in page
    # Nor through the API with the link's token.
    anonymous = Client().get(f"/api/sessions/{crew.session.pk}/reviews/", HTTP_X_SHARE_TOKEN=link.raw_token)
    assert anonymous.status_code in (401, 403)


def test_a_requester_outside_the_reviewers_team_still_follows_the_request(crew: Crew) -> None:
    # The owner may change her session without belonging to the team it is shared with.
    TeamMembership.objects.filter(team=crew.team, user=crew.owner).delete()
    review = crew.request(reviewers=["eddie"])
    assert review.status_code == 201, review.content
    assert statuses(crew, crew.owner) == ["pending"]
    assert [r["id"] for r in crew.client(crew.owner).get("/api/reviews/").json()["others"]] == [
        review.json()["id"]
    ]
    # Her team's queue stays closed to her.
    assert crew.client(crew.owner).get(f"/api/reviews/?team={crew.team.pk}").status_code == 404
    assert crew.client(crew.owner).post(f"/api/reviews/{review.json()['id']}/withdraw/").status_code == 200


def test_the_queue_is_linked_from_the_navigation_and_the_team_page(crew: Crew) -> None:
    web = Client()
    web.force_login(crew.editor)
    team_page = web.get(f"/teams/{crew.team.pk}/").content.decode()
    assert f'href="/teams/{crew.team.pk}/reviews/" id="team-reviews"' in team_page
    assert 'href="/reviews/" id="reviews-nav"' in web.get("/").content.decode()
