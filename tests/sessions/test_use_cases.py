"""Each use case checks access, writes and logs in one transaction, whatever adapter calls it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from rest_framework.exceptions import APIException
from rest_framework.test import APIRequestFactory

from actionlog import services as actions
from actionlog.models import ActionLog
from core.api.errors import api_exception_handler
from live.consumers import CLOSE_FORBIDDEN, CLOSE_UNAUTHENTICATED, close_code
from sessions_app import access, services
from sessions_app.models import Entry, SessionShare
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(user: Callable[..., Any]) -> dict[str, Any]:
    owner, viewer, other = user("owner"), user("viewer"), user("other")
    team = Team.objects.create(name="readers")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    services.share_with_team(session=session, team=team, access=SessionShare.Access.EDITOR, actor=owner)
    return {"owner": owner, "viewer": viewer, "other": other, "team": team, "session": session}


def test_a_failing_log_write_rolls_the_label_back(world: dict[str, Any], monkeypatch: Any) -> None:
    session, owner = world["session"], world["owner"]
    before = Entry.objects.filter(session=session).count()

    def broken(**_: Any) -> None:
        raise RuntimeError("the log is down")

    monkeypatch.setattr(actions, "record_action", broken)
    with pytest.raises(RuntimeError):
        services.set_label(session=session, target_id="u1", label="x", actor=owner)
    assert Entry.objects.filter(session=session).count() == before  # no label without its log row


def test_the_use_case_logs_its_action_whoever_calls_it(world: dict[str, Any]) -> None:
    session, owner = world["session"], world["owner"]
    fork = services.fork_session(session=session, entry_id="a1", actor=owner)
    services.navigate_without_summary(session=session, target_id="a2", actor=owner)
    services.delete_session(session=fork.session, actor=owner)
    rows = {(r.action, r.actor_id) for r in ActionLog.objects.filter(actor=owner)}
    assert {("fork", owner.pk), ("navigate", owner.pk), ("delete", owner.pk), ("import", owner.pk)} <= rows


def test_access_refusals_are_its_own_exceptions(world: dict[str, Any]) -> None:
    session, viewer, other = world["session"], world["viewer"], world["other"]
    TeamMembership.objects.filter(user=viewer).update(role=TeamMembership.Role.VIEWER)
    with pytest.raises(access.NotVisible) as hidden:
        access.require_access(other, session.pk)
    with pytest.raises(access.NotSignedIn) as anonymous:
        access.require_access(AnonymousUser(), session.pk)
    with pytest.raises(access.Forbidden) as read_only:
        services.append_entries(session=session, entries=[{"type": "custom"}], actor=viewer)
    for exc in (hidden.value, anonymous.value, read_only.value):
        assert not isinstance(exc, APIException)  # deciding is not answering HTTP
    assert Entry.objects.filter(session=session, type="custom").count() == 0


def test_refusals_map_once_to_statuses_and_close_codes(world: dict[str, Any]) -> None:
    request = APIRequestFactory().get("/")
    statuses = {
        kind: api_exception_handler(kind("no"), {"request": request}).status_code  # type: ignore[union-attr]
        for kind in (access.NotVisible, access.Forbidden)
    }
    assert statuses == {access.NotVisible: 404, access.Forbidden: 403}
    assert close_code(access.NotSignedIn()) == CLOSE_UNAUTHENTICATED
    assert close_code(access.NotVisible("no")) == close_code(access.Forbidden("no")) == CLOSE_FORBIDDEN


def test_a_session_is_shared_only_with_a_team_of_its_owner(world: dict[str, Any], user: Any) -> None:
    foreign = Team.objects.create(name="elsewhere")
    TeamMembership.objects.create(team=foreign, user=user("stranger"), role=TeamMembership.Role.OWNER)
    with pytest.raises(access.NotVisible):
        services.share_with_team(
            session=world["session"], team=foreign, access="viewer", actor=world["owner"]
        )
    assert not SessionShare.objects.filter(team=foreign).exists()
