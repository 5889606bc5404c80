"""Who sees and changes a session: owner, team editor, team viewer, link holder, other user, anonymous."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from sessions_app import access, services
from sessions_app.models import ActionLog, ChatSession, SessionShare, Team, TeamMembership

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
    session = services.import_jsonl(owner=owner, data=DATA).session
    return {
        "owner": owner,
        "editor": editor,
        "viewer": viewer,
        "other": other,
        "team": team,
        "session": session,
    }


def _can(user: Any, session: ChatSession) -> tuple[bool, bool]:
    return (
        ChatSession.objects.visible_to(user).filter(pk=session.pk).exists(),
        ChatSession.objects.editable_by(user).filter(pk=session.pk).exists(),
    )


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
    services.append_entries(session=s, entries=[{"type": "custom", "customType": "later"}])
    granted = access.resolve_access(AnonymousUser(), s.pk, link_token=link.raw_token)
    assert granted is not None
    assert granted.max_seq() == 0 and granted.path_leaf() == "u1"


def test_sharing_is_audited_and_the_log_is_append_only(world: dict[str, Any]) -> None:
    services.share_with_team(
        session=world["session"], team=world["team"], access="viewer", actor=world["owner"]
    )
    row = ActionLog.objects.get(action="share")
    assert row.actor == world["owner"] and row.detail["team"] == "core"
    with pytest.raises(ValueError):
        row.save()
    with pytest.raises(ValueError):
        row.delete()
