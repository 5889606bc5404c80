"""``GET /api/sessions/<pk>/runs/remote/``: the run Pi is doing on a runner, for those who may steer it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from agent.models import AgentRun
from runners import services as runner_services
from runners.models import RunnerRun
from sessions_app import services
from teams.models import Team, TeamMembership

pytestmark = pytest.mark.django_db


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_writers_learn_of_the_run_on_a_runner_viewers_and_strangers_do_not(user: Callable[..., Any]) -> None:
    ada, bob, eve = user(), user(), user()
    session = services.create_session(actor=ada, cwd="/w")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=ada, role="owner")
    TeamMembership.objects.create(team=team, user=bob, role="viewer")
    services.share_with_team(session=session, team=team, access="viewer", actor=ada)
    url = f"/api/sessions/{session.pk}/runs/remote/"
    assert _client(ada).get(url).json() == {"runId": None, "runner": None}

    runner, _ = runner_services.create_runner(actor=ada, name="box")
    run = AgentRun.objects.create(session=session, requested_by=ada, prompt="go", status="running")
    RunnerRun.objects.create(run=run, runner=runner, workspace="work")
    answer = _client(ada).get(url).json()
    assert answer == {"runId": str(run.public_id), "runner": {"id": runner.pk, "name": "box"}}
    # Bob reads the session but may not change it, so he may not steer: he is told of no run.
    assert _client(bob).get(url).json() == {"runId": None, "runner": None}
    assert _client(eve).get(url).status_code == 404

    run.status = "succeeded"
    run.save(update_fields=["status"])
    assert _client(ada).get(url).json() == {"runId": None, "runner": None}
