"""The identity provider's groups decide the mapped teams only, on the server's authority, logged."""

from __future__ import annotations

from typing import Any

import pytest

from actionlog.models import ActionLog
from core.actors import IDENTITY_PROVIDER
from teams import services as team_services
from teams.models import Team, TeamInvitation, TeamMembership


def _roles(person: Any) -> dict[str, str]:
    return dict(TeamMembership.objects.filter(user=person).values_list("team__name", "role"))


def test_only_mapped_teams_follow_the_groups(user: Any) -> None:
    owner, person = user("owner"), user("person")
    hobby = team_services.create_team(actor=owner, name="Hobby")
    TeamMembership.objects.create(team=hobby, user=person, role="editor")
    eng = team_services.create_team(actor=owner, name="Engineering")
    Team.objects.filter(pk=eng.pk).update(managed_by_provider=True)  # staff gave it to the provider
    team_services.invite_member(actor=owner, team_id=eng.pk, username="person", role="viewer")

    changes = team_services.sync_team_memberships(
        actor=IDENTITY_PROVIDER,
        user=person,
        roles={"Engineering": "editor", "Ops": "viewer"},
        managed={"Engineering", "Ops", "Platform"},
    )
    assert sorted(changes) == [("Engineering", "joined", "editor"), ("Ops", "joined", "viewer")]
    assert _roles(person) == {"Hobby": "editor", "Engineering": "editor", "Ops": "viewer"}
    assert not TeamInvitation.objects.filter(user=person).exists()  # joined: nothing left to accept
    assert not Team.objects.filter(name="Platform").exists()  # no group grants it: not created
    created = ActionLog.objects.get(action="team_create", team_label="Ops")
    assert created.actor_name == "identity-provider" and created.actor is None

    # Nothing changed at the provider: the next sign-in changes and logs nothing.
    rows = ActionLog.objects.count()
    assert (
        team_services.sync_team_memberships(
            actor=IDENTITY_PROVIDER,
            user=person,
            roles={"Engineering": "editor", "Ops": "viewer"},
            managed={"Engineering", "Ops"},
        )
        == []
    )
    assert ActionLog.objects.count() == rows

    team_services.sync_team_memberships(
        actor=IDENTITY_PROVIDER, user=person, roles={}, managed={"Engineering", "Ops"}
    )
    assert _roles(person) == {"Hobby": "editor"}  # the unmapped team is left alone
    assert TeamMembership.objects.get(team=eng, user=owner).role == "owner"


def test_only_the_server_syncs_memberships(user: Any) -> None:
    person = user("person")
    with pytest.raises(TypeError, match="identity provider"):
        team_services.sync_team_memberships(
            actor=person, user=person, roles={"Ops": "owner"}, managed={"Ops"}
        )
    assert not Team.objects.filter(name="Ops").exists()


def test_a_team_the_provider_does_not_manage_is_refused_and_logged(user: Any) -> None:
    squatter, person = user("squatter"), user("person")
    squat = team_services.create_team(actor=squatter, name="Engineering")

    changes = team_services.sync_team_memberships(
        actor=IDENTITY_PROVIDER, user=person, roles={"Engineering": "owner"}, managed={"Engineering"}
    )
    assert changes == [("Engineering", "refused", "owner")]
    assert _roles(person) == {}
    assert _roles(squatter) == {"Engineering": "owner"}
    refusal = ActionLog.objects.get(action="team_sync", team=squat)
    assert refusal.detail["change"] == "refused" and refusal.actor_name == "identity-provider"


def test_a_mapped_name_is_kept_from_users_while_a_provider_is_configured(user: Any, settings: Any) -> None:
    from accounts_app.oidc_config import read_config
    from core.errors import InvalidSharing

    settings.OIDC_SIGN_IN = read_config(
        {
            "PIWEB_OIDC_ISSUER": "https://id.example.com",
            "PIWEB_OIDC_CLIENT_ID": "piweb",
            "PIWEB_OIDC_CLIENT_SECRET": "s",
            "PIWEB_OIDC_TEAM_MAP": "eng=Engineering:editor",
        }
    )
    with pytest.raises(InvalidSharing, match="identity provider"):
        team_services.create_team(actor=user("squatter"), name="Engineering")
    assert not Team.objects.filter(name="Engineering").exists()
    fans = team_services.create_team(actor=user("someone"), name="engineering-fans")
    assert fans.name == "engineering-fans" and not fans.managed_by_provider
