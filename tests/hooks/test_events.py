"""Each event reaches the hooks that chose it, through ``emit_event``: mentions, runs, reviews."""

from __future__ import annotations

import pytest

from hooks.facade import emit_event
from hooks.models import Delivery

from .conftest import Crew, Receiver, make_hook
from .test_access import comment
from .test_delivery import close_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.usefixtures("eager_tasks")
def test_a_mention_reaches_the_mentioned_persons_hook_once(crew: Crew, receiver: Receiver) -> None:
    make_hook(crew.client(crew.editor), receiver, ["mention"])
    make_hook(crew.client(crew.owner), receiver, ["mention"])  # the author hears nothing of their own
    pk = comment(crew, crew.owner, "@eddie please check the parser")
    [got] = receiver.wait_for(1)
    assert got.json["event"] == "mention" and got.json["actor"]["name"] == "olga"
    assert got.json["data"]["commentId"] == pk and got.json["data"]["entryId"] == "u2"
    # An edit that keeps the mention does not say it again.
    edited = crew.client(crew.owner).patch(
        f"/api/comments/{pk}/", {"body": "@eddie please check it"}, format="json"
    )
    assert edited.status_code == 200
    assert Delivery.objects.count() == 1


@pytest.mark.usefixtures("eager_tasks")
def test_runs_end_or_fail_for_whoever_chose_which(crew: Crew, receiver: Receiver) -> None:
    make_hook(crew.client(crew.owner), receiver, ["run.failed"])
    close_run(crew, failed=False)
    assert Delivery.objects.count() == 0
    run = close_run(crew, failed=True)
    [got] = receiver.wait_for(1)
    assert got.json["data"]["runId"] == str(run.public_id) and got.json["data"]["status"] == "failed"


@pytest.mark.usefixtures("eager_tasks")
def test_an_app_above_sends_its_own_events_through_emit_event(crew: Crew, receiver: Receiver) -> None:
    """What a review app does when a review is requested: the reviewer's and the team's hooks hear."""
    make_hook(crew.client(crew.editor), receiver, ["review.requested"])
    make_hook(crew.client(crew.owner), receiver, ["review.requested"], team=crew.team)
    emit_event(
        "review.requested",
        session=crew.session,
        actor=crew.owner,
        data={"reviewId": 1, "text": "x" * 1000},
        users=[crew.editor],
    )
    got = receiver.wait_for(2)
    assert {g.json["team"] is None for g in got} == {True, False}
    assert all(len(g.json["data"]["text"]) == 280 for g in got)  # short text only
    with pytest.raises(ValueError):
        emit_event("review.exploded", session=crew.session, actor=crew.owner, data={})


@pytest.mark.usefixtures("eager_tasks")
def test_a_real_review_request_and_decision_reach_the_hooks_that_chose_them(
    crew: Crew, receiver: Receiver
) -> None:
    make_hook(crew.client(crew.editor), receiver, ["review.requested"])
    make_hook(crew.client(crew.owner), receiver, ["review.decided"])
    asked = crew.client(crew.owner).post(
        f"/api/sessions/{crew.session.pk}/reviews/", {"reviewers": ["eddie"], "note": "ok?"}, format="json"
    )
    assert asked.status_code == 201, asked.content
    [requested] = receiver.wait_for(1)
    assert requested.json["event"] == "review.requested"
    assert requested.json["data"]["reviewers"] == ["eddie"] and requested.json["data"]["note"] == "ok?"
    review = asked.json()["id"]
    decided = crew.client(crew.editor).post(
        f"/api/reviews/{review}/decision/", {"decision": "approved", "note": "fine"}, format="json"
    )
    assert decided.status_code == 200, decided.content
    got = receiver.wait_for(2)
    decision = next(g for g in got if g.json["event"] == "review.decided")
    assert decision.json["data"]["reviewer"] == "eddie" and decision.json["data"]["decision"] == "approved"
    # The outsider's session never reached a hook: every delivery names the shared session.
    assert {g.json["session"]["id"] for g in got} == {crew.session.pk}
