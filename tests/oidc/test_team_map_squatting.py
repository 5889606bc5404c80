"""The provider's team map fills only teams the provider (or staff) controls, never a team a user made.

A user with no relation to anyone must not be able to name a team after a mapped one and receive every
provider user of the group, then read their sessions through a default share.
"""

from __future__ import annotations

import httpx
import pytest
from django.contrib.auth import get_user_model

from actionlog.models import ActionLog
from teams.models import Team, TeamMembership

from ..live.servers import token_for
from .conftest import OidcStack, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _members(team_name: str) -> dict[str, str]:
    return dict(TeamMembership.objects.filter(team__name=team_name).values_list("user__username", "role"))


def test_a_user_cannot_create_a_team_under_a_mapped_name(oidc_stack: OidcStack, django_user_model) -> None:
    mallory = django_user_model.objects.create_user("mallory", password="pw-mallory-12345")
    http = httpx.Client(
        base_url=oidc_stack.piweb.base_url,
        timeout=20,
        headers={"Authorization": f"Token {token_for(mallory)}"},
    )

    refused = http.post("/api/teams/", json={"name": "Engineering"})
    assert refused.status_code == 400
    assert "identity provider" in refused.text
    assert not Team.objects.filter(name="Engineering").exists()
    # An unmapped name is an ordinary team, owned by its maker.
    assert http.post("/api/teams/", json={"name": "Mallory's corner"}).status_code == 201
    assert _members("Mallory's corner") == {"mallory": "owner"}


def test_a_team_a_user_made_before_the_map_never_receives_the_providers_users(
    oidc_stack: OidcStack, django_user_model
) -> None:
    # The squat as it stands in a database from before: a user's own team under a mapped name, shared by
    # default, so every member's new sessions would be shared with its owner.
    mallory = django_user_model.objects.create_user("mallory", password="pw-mallory-12345")
    squat = Team.objects.create(name="Engineering", default_share="viewer")
    TeamMembership.objects.create(team=squat, user=mallory, role="owner")

    oidc_stack.provider.person("carol", "carol@example.com", ["eng", "ops"])
    sign_in(oidc_stack, "carol")

    carol = get_user_model().objects.get(username="carol")
    assert _members("Engineering") == {"mallory": "owner"}
    # The provider still runs the teams it does control.
    carols = TeamMembership.objects.filter(user=carol).values_list("team__name", "role")
    assert dict(carols) == {"Ops": "viewer"}
    assert Team.objects.get(name="Ops").managed_by_provider
    refusal = ActionLog.objects.get(action="team_sync", team=squat)
    assert refusal.detail["change"] == "refused" and refusal.detail["username"] == "carol"

    # Mallory's team list shows no provider user.
    mine = httpx.get(
        f"{oidc_stack.piweb.base_url}/api/teams/",
        headers={"Authorization": f"Token {token_for(mallory)}"},
        timeout=20,
    ).json()
    engineering = next(team for team in mine["results"] if team["name"] == "Engineering")
    assert [m["username"] for m in engineering["members"]] == ["mallory"]
    assert engineering["managedByProvider"] is False

    # Staff who decide the team is the provider's mark it so; the next sign-in follows the groups.
    Team.objects.filter(pk=squat.pk).update(managed_by_provider=True)
    sign_in(oidc_stack, "carol")
    assert _members("Engineering") == {"mallory": "owner", "carol": "editor"}
