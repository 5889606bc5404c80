"""Deliveries reach a real HTTP receiver on loopback: signed, retried with backoff, replayed, swept."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

import pytest
from django.utils import timezone

from actionlog.models import ActionLog
from agent.facade import AgentRun
from agent.facade import signals as agent_signals
from hooks.models import Delivery, Hook
from piweb.celery import app as celery_app
from sessions_app import services

from .conftest import Crew, Receiver, make_hook

pytestmark = pytest.mark.django_db(transaction=True)


def close_run(crew: Crew, *, failed: bool, session: Any = None) -> AgentRun:
    """A run of the session ends, as the agent's loop ends it: its row saved and ``run_closed`` sent in
    one transaction."""
    from django.db import transaction

    run = AgentRun.objects.create(session=session or crew.session, requested_by=crew.owner, prompt="build it")
    run.status = AgentRun.Status.FAILED if failed else AgentRun.Status.SUCCEEDED
    run.error = "The provider reported an error" if failed else ""
    with transaction.atomic():
        run.save(update_fields=["status", "error"])
        agent_signals.run_closed.send(AgentRun, run=run)
    return run


@pytest.mark.usefixtures("eager_tasks")
def test_a_team_hook_receives_a_signed_delivery_when_a_session_is_shared(
    crew: Crew, receiver: Receiver, user: Any
) -> None:
    make_hook(crew.client(crew.owner), receiver, ["session.shared", "run.failed"], team=crew.team)
    shared = crew.client(crew.owner).post(
        f"/api/sessions/{crew.private.pk}/shares/",
        {"teamId": crew.team.pk, "access": "viewer"},
        format="json",
    )
    assert shared.status_code in (200, 201), shared.content
    [got] = receiver.wait_for(1)
    assert got.signed
    assert got.headers["X-Piweb-Event"] == "session.shared"
    body = got.json
    assert body["id"] == got.headers["X-Piweb-Delivery"]
    assert body["session"]["title"] == "Merger plans"
    assert body["session"]["url"].endswith(f"/sessions/{crew.private.pk}/")
    assert body["team"]["name"] == "crew" and body["actor"]["name"] == "olga"
    assert body["data"] == {"access": "viewer"}
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)
    assert delivery.response_ms is not None and delivery.delivered_at is not None
    # The log reads the same through the API, for the team's owners.
    log = crew.client(crew.owner).get(f"/api/hooks/{delivery.hook_id}/deliveries/").json()
    assert [(d["event"], d["status"], d["lastStatusCode"]) for d in log["results"]] == [
        ("session.shared", "delivered", 200)
    ]


@pytest.mark.usefixtures("eager_tasks")
def test_a_slack_hook_gets_slacks_message_shape(crew: Crew, receiver: Receiver) -> None:
    make_hook(crew.client(crew.owner), receiver, ["run.failed"], format="slack")
    close_run(crew, failed=True)
    [got] = receiver.wait_for(1)
    body = got.json
    assert got.signed
    assert body["text"].startswith("A run failed in <http") and body["blocks"][0]["type"] == "section"
    assert "&lt;" not in body["text"]  # the title is plain here; escaping is for what a title holds


@pytest.mark.usefixtures("eager_tasks")
def test_a_failing_receiver_is_tried_again_after_its_backoff_and_gets_the_delivery_once(
    crew: Crew, receiver: Receiver
) -> None:
    hook_id = make_hook(crew.client(crew.owner), receiver, ["run.ended"])
    receiver.answers = [500, 503]  # down twice, then back
    close_run(crew, failed=False)
    receiver.wait_for(1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    assert delivery.next_attempt_at is not None
    waited = (delivery.next_attempt_at - timezone.now()).total_seconds()
    assert 0.5 < waited <= 1.0  # the first backoff (1 s, less its jitter)
    # The hook's page shows it failing; it is not paused behind its owner's back.
    [listed] = crew.client(crew.owner).get("/api/hooks/").json()["results"]
    assert listed["failingSince"] is not None and listed["active"] is True

    # Early: the retry task that ran at once (tasks run eagerly here) did not send; nor does the sweep.
    assert celery_app.tasks["hooks.sweep_due"].apply().get() == 0
    assert len(receiver.got) == 1
    deadline = time.monotonic() + 15
    while Delivery.objects.get().status == "pending" and time.monotonic() < deadline:
        celery_app.tasks["hooks.sweep_due"].apply()
        time.sleep(0.05)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)
    got = receiver.got
    assert len(got) == 3 and all(g.signed for g in got)
    assert len({g.headers["X-Piweb-Delivery"] for g in got}) == 1  # one delivery, tried three times
    gaps = [b.at - a.at for a, b in pairwise(got)]
    assert gaps[0] >= 0.75 and gaps[1] >= 1.5, gaps  # 1 s then 2 s, each less at most a fifth
    assert Hook.objects.get(pk=hook_id).failing_since is None


@pytest.mark.usefixtures("eager_tasks")
def test_the_first_success_after_an_outage_sends_what_waited_at_once(
    crew: Crew, receiver: Receiver, settings: Any
) -> None:
    settings.PIWEB_HOOKS_BACKOFF_FIRST_SECONDS = 600.0  # left alone, the two would wait ten minutes
    settings.PIWEB_HOOKS_BACKOFF_MAX_SECONDS = 600.0
    hook_id = make_hook(crew.client(crew.owner), receiver, ["run.ended"])
    receiver.answers = [503, 503]
    first, second = close_run(crew, failed=False), close_run(crew, failed=False)
    receiver.wait_for(2)
    assert sorted(Delivery.objects.values_list("status", "attempts")) == [("pending", 1), ("pending", 1)]
    assert Hook.objects.get(pk=hook_id).failing_since is not None

    third = close_run(crew, failed=False)  # the endpoint is back: this one goes through, and so do they
    got = receiver.wait_for(5, seconds=5)
    assert len(got) == 5 and all(g.signed for g in got)
    assert sorted(Delivery.objects.values_list("status", "attempts")) == [
        ("delivered", 1),
        ("delivered", 2),
        ("delivered", 2),
    ]
    # The one that succeeded arrived first; the two that waited followed, oldest first, each once more.
    runs = [g.json["data"]["runId"] for g in got[2:]]
    assert runs == [str(third.public_id), str(first.public_id), str(second.public_id)]
    assert Hook.objects.get(pk=hook_id).failing_since is None
    assert Delivery.objects.filter(attempt_started_at__isnull=False).count() == 0


@pytest.mark.usefixtures("eager_tasks")
def test_a_delivery_still_failing_when_the_window_closes_is_marked_failed(
    crew: Crew, receiver: Receiver, settings: Any
) -> None:
    settings.PIWEB_HOOKS_GIVE_UP_SECONDS = 0.0
    make_hook(crew.client(crew.owner), receiver, ["run.failed"])
    receiver.answers = [500]
    close_run(crew, failed=True)
    receiver.wait_for(1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 1, None)
    [listed] = crew.client(crew.owner).get("/api/hooks/").json()["results"]
    assert listed["failedDeliveries"] == 1


@pytest.mark.usefixtures("eager_tasks")
def test_an_owner_replays_a_delivery_as_a_new_signed_one(crew: Crew, receiver: Receiver) -> None:
    client = crew.client(crew.owner)
    hook_id = make_hook(client, receiver, ["run.ended"])
    close_run(crew, failed=False)
    [first] = receiver.wait_for(1)
    original = Delivery.objects.get()
    answer = client.post(f"/api/hooks/{hook_id}/deliveries/{original.pk}/replay/")
    assert answer.status_code == 202, answer.content
    second = receiver.wait_for(2)[1]
    assert second.signed
    assert second.headers["X-Piweb-Delivery"] != first.headers["X-Piweb-Delivery"]
    assert second.json["replayOf"] == first.headers["X-Piweb-Delivery"]
    assert second.json["data"] == first.json["data"]
    row = ActionLog.objects.get(action="hook_replay")
    assert (row.actor_name, row.session_id) == ("olga", crew.session.pk)
    # A test ping arrives too, whatever events the hook chose.
    assert client.post(f"/api/hooks/{hook_id}/ping/").status_code == 202
    assert receiver.wait_for(3)[2].headers["X-Piweb-Event"] == "ping"


def test_the_sweep_sends_a_delivery_whose_task_never_ran(crew: Crew, receiver: Receiver) -> None:
    make_hook(crew.client(crew.owner), receiver, ["run.failed"])
    # Tasks are queued to the broker here and no worker takes them: as if the task were lost.
    close_run(crew, failed=True)
    time.sleep(0.3)
    assert receiver.got == []
    pending = Delivery.objects.get()
    assert (pending.status, pending.attempts) == ("pending", 0)
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True  # the beat's sweep, and what it queues, run here
    try:
        assert celery_app.tasks["hooks.sweep_due"].apply().get() == 1
    finally:
        celery_app.conf.task_always_eager = eager
    [got] = receiver.wait_for(1)
    assert got.signed and got.headers["X-Piweb-Delivery"] == str(pending.public_id)
    assert Delivery.objects.get().status == "delivered"


@pytest.mark.usefixtures("eager_tasks")
def test_a_paused_hook_gets_nothing_new_and_resuming_sends_what_waited(
    crew: Crew, receiver: Receiver
) -> None:
    client = crew.client(crew.owner)
    hook_id = make_hook(client, receiver, ["run.ended"])
    receiver.answers = [500]
    close_run(crew, failed=False)
    receiver.wait_for(1)
    assert client.patch(f"/api/hooks/{hook_id}/", {"active": False}, format="json").json()["active"] is False
    close_run(crew, failed=False)  # no delivery for a paused hook
    assert Delivery.objects.count() == 1
    time.sleep(1.1)
    assert celery_app.tasks["hooks.sweep_due"].apply().get() == 0  # waits while paused
    assert client.patch(f"/api/hooks/{hook_id}/", {"active": True}, format="json").status_code == 200
    receiver.wait_for(2)
    assert Delivery.objects.get().status == "delivered"


@pytest.mark.usefixtures("eager_tasks")
def test_a_rotated_secret_signs_from_then_on(crew: Crew, receiver: Receiver) -> None:
    client = crew.client(crew.owner)
    hook_id = make_hook(client, receiver, ["run.ended"])
    old = receiver.secret
    rotated = client.post(f"/api/hooks/{hook_id}/rotate/").json()["secret"]
    assert rotated != old
    close_run(crew, failed=False)
    [got] = receiver.wait_for(1)
    assert not got.signed  # the receiver still holds the old secret
    receiver.secret = rotated
    client.post(f"/api/hooks/{hook_id}/deliveries/{Delivery.objects.get().pk}/replay/")
    assert receiver.wait_for(2)[1].signed
    # The secret is stored encrypted and never listed again.
    listed = client.get("/api/hooks/").json()["results"][0]
    assert "secret" not in listed
    assert Hook.objects.filter(pk=hook_id).values_list("secret", flat=True)  # loaded decrypted...
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM hooks_hook WHERE id = %s", [hook_id])
        assert cursor.fetchone()[0].startswith("fernet:")


def test_a_hook_may_not_point_at_a_private_address_unless_allowed(crew: Crew, settings: Any) -> None:
    settings.PIWEB_HOOKS_ALLOW_PRIVATE = False
    client = crew.client(crew.owner)
    for url in (
        "http://127.0.0.1:9/x",
        "http://10.1.2.3/x",
        "http://[::1]/x",
        "http://localhost/x",
        "ftp://a.example/x",
    ):
        answer = client.post("/api/hooks/", {"name": "x", "url": url, "events": ["run.ended"]}, format="json")
        assert answer.status_code == 400, (url, answer.content)
    answer = client.post(
        "/api/hooks/", {"name": "x", "url": "https://hooks.example.com/x", "events": ["nope"]}, format="json"
    )
    assert answer.status_code == 400 and "Unknown events" in answer.json()["error"]
    services.rename_session(session=crew.session, name="still works", actor=crew.owner)
