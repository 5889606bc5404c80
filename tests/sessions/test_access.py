"""Who sees and changes a session: owner, team editor, team viewer, link holder, other user, anonymous."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from actionlog.models import ActionLog
from sessions_app import access, services
from sessions_app.models import ChatSession, SessionShare
from teams.models import Team, TeamMembership

pytestmark = pytest.mark.django_db

DATA = (
    b'{"type":"session","version":3,"id":"shared","timestamp":"t","cwd":"/"}\n'
    b'{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}\n'
)


@pytest.fixture
def world(user: Callable[..., Any]) -> dict[str, Any]:
    owner, editor, viewer, other = user("owner"), user("editor"), user("viewer"), user("other")
    team = Team.objects.create(name="core")
    # A session is shared only with a team its owner belongs to.
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    session = services.import_jsonl(actor=owner, data=DATA).session
    return {
        "owner": owner,
        "editor": editor,
        "viewer": viewer,
        "other": other,
        "team": team,
        "session": session,
    }


def _can(user: Any, session: ChatSession) -> tuple[bool, bool]:
    """Return (may read, may change), and check the one-session grant the API uses says the same."""
    can = (
        ChatSession.objects.visible_to(user).filter(pk=session.pk).exists(),
        ChatSession.objects.editable_by(user).filter(pk=session.pk).exists(),
    )
    grant = ChatSession.objects.grant_for(user, session.pk)
    assert (grant is not None, grant is not None and grant[1]) == can
    assert grant is None or grant[0].pk == session.pk
    return can


def test_private_until_shared(world: dict[str, Any]) -> None:
    s = world["session"]
    assert _can(world["owner"], s) == (True, True)
    for name in ("editor", "viewer", "other"):
        assert _can(world[name], s) == (False, False)
    assert _can(AnonymousUser(), s) == (False, False)


def test_team_roles_limit_an_editor_share(world: dict[str, Any]) -> None:
    s = world["session"]
    services.share_with_team(
        session=s, team=world["team"], access=SessionShare.Access.EDITOR, actor=world["owner"]
    )
    assert _can(world["editor"], s) == (True, True)
    assert _can(world["viewer"], s) == (True, False)  # a team viewer never edits
    assert _can(world["other"], s) == (False, False)
    services.share_with_team(
        session=s, team=world["team"], access=SessionShare.Access.VIEWER, actor=world["owner"]
    )
    assert _can(world["editor"], s) == (True, False)
    services.unshare_with_team(session=s, team=world["team"], actor=world["owner"])
    assert _can(world["editor"], s) == (False, False)


@pytest.mark.parametrize("role_a", [*TeamMembership.Role.values, None])
@pytest.mark.parametrize("role_b", [*TeamMembership.Role.values, None])
def test_two_teams_each_grant_what_their_share_and_role_allow(
    world: dict[str, Any], role_a: str | None, role_b: str | None
) -> None:
    """A member of two teams, one with a viewer share and one with an editor share: every combination."""
    s, someone = world["session"], world["other"]
    viewing, editing = Team.objects.create(name="viewing"), Team.objects.create(name="editing")
    SessionShare.objects.create(session=s, team=viewing, access=SessionShare.Access.VIEWER)
    SessionShare.objects.create(session=s, team=editing, access=SessionShare.Access.EDITOR)
    for team, role in ((viewing, role_a), (editing, role_b)):
        if role is not None:
            TeamMembership.objects.create(team=team, user=someone, role=role)
    readable = role_a is not None or role_b is not None
    writable = role_b in (TeamMembership.Role.OWNER, TeamMembership.Role.EDITOR)
    assert _can(someone, s) == (readable, writable)


def test_the_grant_of_a_missing_session_is_none(world: dict[str, Any]) -> None:
    for pk in (world["session"].pk + 1000, 0, -1, 2**63, -(2**63) - 1):
        assert ChatSession.objects.grant_for(world["owner"], pk) is None
    assert ChatSession.objects.grant_for(AnonymousUser(), world["session"].pk) is None


def test_only_the_owner_shares(world: dict[str, Any]) -> None:
    with pytest.raises(PermissionError):
        services.share_with_team(
            session=world["session"], team=world["team"], access="viewer", actor=world["other"]
        )


def test_links_are_read_only_revocable_and_expire(world: dict[str, Any]) -> None:
    s, owner = world["session"], world["owner"]
    link = services.create_share_link(session=s, actor=owner)
    granted = access.resolve_access(AnonymousUser(), s.pk, link_token=link.raw_token)
    assert granted is not None and not granted.can_write and granted.via_link
    assert access.resolve_access(AnonymousUser(), s.pk, link_token="wrong") is None
    services.revoke_share_link(link=link, actor=owner)
    assert access.resolve_access(AnonymousUser(), s.pk, link_token=link.raw_token) is None
    expired = services.create_share_link(
        session=s, actor=owner, expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert access.resolve_access(AnonymousUser(), s.pk, link_token=expired.raw_token) is None


def test_frozen_path_link_is_pinned(world: dict[str, Any]) -> None:
    s, owner = world["session"], world["owner"]
    link = services.create_share_link(session=s, actor=owner, scope="path", frozen=True)
    services.append_entries(session=s, actor=s.owner, entries=[{"type": "custom", "customType": "later"}])
    granted = access.resolve_access(AnonymousUser(), s.pk, link_token=link.raw_token)
    assert granted is not None
    assert granted.max_seq() == 0 and granted.path_leaf() == "u1"


def test_sharing_is_audited_and_the_log_is_append_only(world: dict[str, Any]) -> None:
    services.share_with_team(
        session=world["session"], team=world["team"], access="viewer", actor=world["owner"]
    )
    row = ActionLog.objects.get(action="share")
    assert row.actor == world["owner"] and row.team == world["team"] and row.team_label == "core"
    with pytest.raises(ValueError):
        row.save()
    with pytest.raises(ValueError):
        row.delete()
