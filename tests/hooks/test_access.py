"""A viewer learns nothing through hooks of sessions outside their reach: not by a personal hook, a team
hook, the delivery log or a replay; and a member removed from the team stops hearing at once."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from hooks.facade import emit_event
from hooks.models import Delivery
from teams import services as team_services
from teams.models import Team, TeamMembership

from .conftest import Crew, Receiver, make_hook
from .test_delivery import close_run

pytestmark = pytest.mark.django_db(transaction=True)


def comment(crew: Crew, who: Any, body: str) -> int:
    answer = crew.client(who).post(
        f"/api/sessions/{crew.session.pk}/comments/", {"entryId": "u2", "body": body}, format="json"
    )
    assert answer.status_code == 201, answer.content
    return int(answer.json()["id"])


@pytest.mark.usefixtures("eager_tasks")
def test_a_personal_hook_hears_nothing_of_a_session_its_owner_cannot_read(
    crew: Crew, receiver: Receiver
) -> None:
    make_hook(
        crew.client(crew.outsider), receiver, ["run.ended", "run.failed", "mention", "review.requested"]
    )
    # Addressed to them by name, still nothing: they may not read the session.
    emit_event("review.requested", session=crew.private, actor=crew.owner, data={}, users=[crew.outsider])
    close_run(crew, failed=True, session=crew.private)
    close_run(crew, failed=False)
    assert Delivery.objects.count() == 0
    assert receiver.got == []


@pytest.mark.usefixtures("eager_tasks")
def test_a_team_hook_hears_only_of_sessions_shared_with_the_team(
    crew: Crew, receiver: Receiver, user: Any
) -> None:
    other_team = Team.objects.create(name="elsewhere")
    TeamMembership.objects.create(team=other_team, user=crew.owner, role=TeamMembership.Role.OWNER)
    make_hook(
        crew.client(crew.owner), receiver, ["run.failed", "session.shared", "secret.found"], team=crew.team
    )
    close_run(crew, failed=True, session=crew.private)  # not shared with the team
    crew.client(crew.owner).post(
        f"/api/sessions/{crew.private.pk}/shares/",
        {"teamId": other_team.pk, "access": "viewer"},
        format="json",
    )
    assert receiver.got == [] and Delivery.objects.count() == 0
    close_run(crew, failed=True)  # shared with the team
    [got] = receiver.wait_for(1)
    assert got.json["session"]["id"] == crew.session.pk
    # Where secrets sit is for the session's owner alone: a team hook never hears of them.
    emit_event("secret.found", session=crew.session, actor=None, data={"count": 1}, users=[crew.owner])
    assert Delivery.objects.count() == 1


@pytest.mark.usefixtures("eager_tasks")
def test_a_member_removed_from_the_team_stops_hearing_at_once(crew: Crew, receiver: Receiver) -> None:
    make_hook(crew.client(crew.viewer), receiver, ["mention"])
    comment(crew, crew.owner, "@vera look at this")
    [got] = receiver.wait_for(1)
    assert got.json["data"]["mentioned"] == ["vera"] and got.json["data"]["text"] == "@vera look at this"
    receiver.answers = [500]
    comment(crew, crew.owner, "@vera and this")
    receiver.wait_for(2)
    waiting = Delivery.objects.get(status="pending")
    team_services.remove_member(actor=crew.owner, team_id=crew.team.pk, username="vera")
    # Its retry is due: it is not sent, and says why in the log.
    Delivery.objects.filter(pk=waiting.pk).update(next_attempt_at=waiting.created_at)
    from piweb.celery import app as celery_app

    celery_app.tasks["hooks.sweep_due"].apply()
    waiting.refresh_from_db()
    assert waiting.status == "cancelled" and "no longer" in waiting.last_error
    assert len(receiver.got) == 2
    # Nor can it be replayed, and new events do not reach it.
    answer = crew.client(crew.viewer).post(f"/api/hooks/{waiting.hook_id}/deliveries/{waiting.pk}/replay/")
    assert answer.status_code == 403
    close_run(crew, failed=True)
    assert len(receiver.got) == 2 and Delivery.objects.count() == 2


@pytest.mark.usefixtures("eager_tasks")
def test_secrets_found_reach_only_the_owners_personal_hook_and_say_only_how_many(
    crew: Crew, receiver: Receiver
) -> None:
    make_hook(crew.client(crew.owner), receiver, ["secret.found"])
    make_hook(crew.client(crew.editor), receiver, ["secret.found"])
    leak = "my key is ghp_" + "Q" * 36
    answer = crew.client(crew.owner).post(
        f"/api/sessions/{crew.session.pk}/append/",
        {"entries": [{"type": "message", "message": {"role": "user", "content": leak, "timestamp": 3}}]},
        format="json",
    )
    assert answer.status_code in (200, 201), answer.content
    [got] = receiver.wait_for(1)
    assert got.json["event"] == "secret.found" and got.json["data"] == {"count": 1}
    assert "ghp_" not in got.body.decode()
    assert Delivery.objects.get().hook.owner == crew.owner


def test_only_those_who_manage_a_hook_see_it_its_log_or_replay_it(crew: Crew, receiver: Receiver) -> None:
    team_hook = make_hook(crew.client(crew.owner), receiver, ["run.failed"], team=crew.team)
    mine = make_hook(crew.client(crew.editor), receiver, ["run.failed"])
    close_run(crew, failed=True)
    delivery = Delivery.objects.get(hook_id=team_hook)
    for who, team_list, status in (
        (crew.editor, 403, 403),
        (crew.viewer, 403, 403),
        (crew.outsider, 404, 404),
    ):
        client = crew.client(who)
        assert client.get(f"/api/teams/{crew.team.pk}/hooks/").status_code == team_list
        assert client.get(f"/api/hooks/{team_hook}/deliveries/").status_code == status
        assert client.post(f"/api/hooks/{team_hook}/deliveries/{delivery.pk}/replay/").status_code == status
        assert client.post(f"/api/hooks/{team_hook}/ping/").status_code == status
        page = Client()
        page.force_login(who)
        assert page.get(f"/teams/{crew.team.pk}/hooks/").status_code == status
    # A personal hook is its owner's alone, even to the team's owner.
    assert crew.client(crew.owner).get(f"/api/hooks/{mine}/deliveries/").status_code == 404
    assert crew.client(crew.owner).delete(f"/api/hooks/{mine}/").status_code == 404
    assert [h["id"] for h in crew.client(crew.owner).get("/api/hooks/").json()["results"]] == []
    assert crew.client(crew.editor).get(f"/api/hooks/{mine}/deliveries/").status_code == 200
