"""A shared session and the six kinds of caller the authorization tests ask about."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from agent.models import AgentRun
from compaction_app.models import CompactionRun
from discussion.models import Comment
from piweb.celery import app as celery_app
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ChatSession, ShareLink
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree

ACTORS = ("owner", "editor", "viewer", "link", "other", "anon")


@dataclass(frozen=True, slots=True)
class World:
    owner: Any
    editor: Any
    viewer: Any
    other: Any
    team: Team
    session: ChatSession
    link: ShareLink
    operation: CompactionRun
    run: AgentRun
    comment: Comment

    def user_of(self, actor: str) -> Any:
        return {"owner": self.owner, "editor": self.editor, "viewer": self.viewer, "other": self.other}.get(
            actor
        )

    def client(self, actor: str) -> APIClient:
        """Return an API client for the actor: signed in, holding the share link, or anonymous."""
        client = APIClient()
        account = self.user_of(actor)
        if account is not None:
            client.force_login(account)
        if actor == "link":
            client.credentials(HTTP_X_SHARE_TOKEN=self.link.raw_token)
        return client


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, False
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates


def build_world(user: Callable[..., Any]) -> World:
    owner, editor, viewer, other = user("owner"), user("editor"), user("viewer"), user("other")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    link = services.create_share_link(session=session, actor=owner)
    operation = CompactionRun.objects.create(
        idempotency_key="authz-op", kind="compaction", session=session, reason="manual", requested_by=owner
    )
    provider = LLMProvider.objects.create(
        name="local", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p", api_key="sk-secret"
    )
    # A queued run: a second prompt is refused with 409, the answer past every permission check.
    run = AgentRun.objects.create(session=session, requested_by=owner, prompt="hi", provider=provider)
    comment = Comment.objects.create(
        session=session, entry_id="u2", author=owner, author_name="owner", body="a note"
    )
    return World(owner, editor, viewer, other, team, session, link, operation, run, comment)


@pytest.fixture
def world(user: Callable[..., Any]) -> World:
    return build_world(user)
