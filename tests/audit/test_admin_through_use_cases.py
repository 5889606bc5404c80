"""Staff changes from the admin go through the owners' use cases: the same rules, a logged row, no leak."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from actionlog.models import ActionLog
from core.errors import Forbidden
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import SessionShare, ShareLink
from teams import services as team_services
from teams.models import TeamMembership
from tests.factories import conversation, store

pytestmark = pytest.mark.django_db


def _client(account: Any) -> Client:
    client = Client()
    client.force_login(account)
    return client


def test_a_changed_provider_key_is_logged_by_name_and_never_by_value(user: Callable[..., Any]) -> None:
    staff = _client(user("root", is_staff=True, is_superuser=True))
    provider = LLMProvider.objects.create(
        name="p", base_url="http://127.0.0.1:9/v1", model_id="m", provider="x"
    )
    body = {
        "name": "p",
        "api": provider.api,
        "base_url": provider.base_url,
        "model_id": "m",
        "provider": "x",
        "context_window": str(provider.context_window),
        "max_output_tokens": str(provider.max_output_tokens),
        "accepts_images": "on",  # the box as the form shows it (checked by default)
        "api_key": "sk-very-secret-value",
    }
    assert staff.post(f"/admin/providers/llmprovider/{provider.pk}/change/", body).status_code == 302
    provider.refresh_from_db()
    assert provider.api_key == "sk-very-secret-value"
    row = ActionLog.objects.get(action="provider_change")
    assert row.detail["changed"] == ["api_key"]
    assert "sk-very-secret-value" not in str(row.detail)
    # Saved again unchanged (the key field left blank keeps it): nothing changed, nothing logged.
    assert (
        staff.post(f"/admin/providers/llmprovider/{provider.pk}/change/", {**body, "api_key": ""}).status_code
        == 302
    )
    assert ActionLog.objects.filter(action="provider_change").count() == 1


def test_a_team_with_members_keeps_an_owner_on_the_admin_page_too(user: Callable[..., Any]) -> None:
    owner, member = user("owner"), user("member")
    team = team_services.create_team(actor=owner, name="core")
    TeamMembership.objects.create(team=team, user=member, role="viewer")
    rows = {m.user_id: m.pk for m in TeamMembership.objects.filter(team=team)}
    body = {
        "name": "core",
        "default_share": "",
        "memberships-TOTAL_FORMS": "2",
        "memberships-INITIAL_FORMS": "2",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, (account, role) in enumerate([(owner, "viewer"), (member, "viewer")]):
        body |= {f"memberships-{i}-id": str(rows[account.pk]), f"memberships-{i}-team": str(team.pk)}
        body |= {f"memberships-{i}-user": str(account.pk), f"memberships-{i}-role": role}
    staff = _client(user("root", is_staff=True, is_superuser=True))
    page = staff.post(f"/admin/teams/team/{team.pk}/change/", body)
    assert page.status_code == 200
    assert "keeps at least one owner" in page.content.decode()
    assert TeamMembership.objects.get(team=team, user=owner).role == "owner"
    # Handing ownership over in one save works: the new owner is made before the old one is demoted.
    body |= {"memberships-1-role": "owner"}
    assert staff.post(f"/admin/teams/team/{team.pk}/change/", body).status_code == 302
    roles = dict(TeamMembership.objects.filter(team=team).values_list("user__username", "role"))
    assert roles == {"owner": "viewer", "member": "owner"}
    logged = list(
        ActionLog.objects.filter(action="team_role").order_by("pk").values_list("detail", flat=True)
    )
    assert [(d["username"], d["role"], d["by_staff"]) for d in logged] == [
        ("member", "owner", True),
        ("owner", "viewer", True),
    ]


def test_staff_without_the_right_cannot_share_or_revoke(user: Callable[..., Any]) -> None:
    owner = user("owner")
    session = store(owner, conversation(2))
    team = team_services.create_team(actor=owner, name="core")
    link = services.create_share_link(session=session, actor=owner)
    viewer_staff = user("helpdesk", is_staff=True)
    viewer_staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_sharelink", "view_sessionshare"])
    )
    client = _client(viewer_staff)
    body = {"session": str(session.pk), "team": str(team.pk), "access": "editor"}
    assert client.post("/admin/sessions_app/sessionshare/add/", body).status_code == 403
    client.post(
        "/admin/sessions_app/sharelink/", {"action": "revoke_links", "_selected_action": [str(link.pk)]}
    )
    link.refresh_from_db()
    assert link.revoked_at is None
    # The use cases check again: a script calling them as staff gets no more than the admin grants.
    with pytest.raises(Forbidden):
        services.share_with_team(
            session=session, team=team, access="editor", actor=viewer_staff, as_staff=True
        )
    with pytest.raises(Forbidden):
        services.revoke_share_link(link=link, actor=viewer_staff, as_staff=True)
    assert not SessionShare.objects.exists()
    assert not ActionLog.objects.filter(actor=viewer_staff).exists()


def test_a_revoked_link_stays_listed_and_cannot_be_edited_or_deleted(user: Callable[..., Any]) -> None:
    owner = user("owner")
    session = store(owner, conversation(2))
    link = services.create_share_link(session=session, actor=owner)
    staff = _client(user("root", is_staff=True, is_superuser=True))
    body = {"action": "revoke_links", "_selected_action": [str(link.pk)]}
    assert staff.post("/admin/sessions_app/sharelink/", body).status_code == 302
    assert ShareLink.objects.get(pk=link.pk).revoked_at is not None
    assert (
        staff.post(f"/admin/sessions_app/sharelink/{link.pk}/change/", {"revoked_at": ""}).status_code == 403
    )
    assert staff.post(f"/admin/sessions_app/sharelink/{link.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ShareLink.objects.get(pk=link.pk).revoked_at is not None


def test_staff_setting_a_team_that_is_gone_get_not_found_and_nothing_is_written(
    user: Callable[..., Any],
) -> None:
    from core.errors import NotVisible
    from discussion import services as discussion_services
    from discussion.models import TeamDiscussion

    staff = user("root", is_staff=True, is_superuser=True)
    with pytest.raises(NotVisible, match="Team not found"):
        discussion_services.set_viewers_may_comment(actor=staff, team_id=987654, allowed=False, as_staff=True)
    assert not TeamDiscussion.objects.exists()
    assert not ActionLog.objects.exists()


def test_staff_declare_a_text_only_model_in_the_admin(user: Callable[..., Any]) -> None:
    staff = _client(user("root", is_staff=True, is_superuser=True))
    provider = LLMProvider.objects.create(
        name="p", base_url="http://127.0.0.1:9/v1", model_id="m", provider="x"
    )
    assert provider.accepts_images and provider.config().accepts_images  # pictures by default
    body = {
        "name": "p",
        "api": provider.api,
        "base_url": provider.base_url,
        "model_id": "m",
        "provider": "x",
        "context_window": str(provider.context_window),
        "max_output_tokens": str(provider.max_output_tokens),
    }  # the box left unticked
    assert staff.post(f"/admin/providers/llmprovider/{provider.pk}/change/", body).status_code == 302
    provider.refresh_from_db()
    assert not provider.config().accepts_images
    assert ActionLog.objects.get(action="provider_change").detail["changed"] == ["accepts_images"]
