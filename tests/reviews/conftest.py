"""A session shared with a team (owner, editor, viewer), a member of another team, and someone outside."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree


@dataclass(frozen=True, slots=True)
class Crew:
    owner: Any
    editor: Any
    viewer: Any
    outsider: Any
    team: Team
    session: ChatSession

    def client(self, who: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=who)
        return client

    @property
    def url(self) -> str:
        return f"/api/sessions/{self.session.pk}/reviews/"

    def request(self, who: Any | None = None, **body: Any) -> Any:
        body.setdefault("reviewers", ["eddie", "vera"])
        return self.client(who or self.owner).post(self.url, body, format="json")

    def decide(self, who: Any, review_id: int, decision: str, note: str = "") -> Any:
        url = f"/api/reviews/{review_id}/decision/"
        return self.client(who).post(url, {"decision": decision, "note": note}, format="json")

    def append(self, parent: str, entry_id: str) -> None:
        entry = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-02T03:05:00.000Z",
            "message": {"role": "user", "content": "more", "timestamp": 9},
        }
        services.append_entries(session=self.session, entries=[entry], actor=self.owner)


@pytest.fixture
def crew(user: Callable[..., Any]) -> Crew:
    owner = user("olga", email="olga@example.test")
    editor = user("eddie", email="eddie@example.test")
    viewer = user("vera", email="vera@example.test")
    outsider = user("oscar", email="oscar@example.test")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    return Crew(owner, editor, viewer, outsider, team, session)


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Run queued tasks (the notification emails) in-process, as they are queued after commit."""
    from piweb.celery import app as celery_app

    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates
