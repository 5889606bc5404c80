"""The sign-in settings: the provider's environment, the group-to-team map, and switching passwords off."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts_app.oidc_config import ConfigError, OidcConfig, parse_team_map, read_config

ENV = {
    "PIWEB_OIDC_ISSUER": "https://id.example.com/realms/team/",
    "PIWEB_OIDC_CLIENT_ID": "piweb",
    "PIWEB_OIDC_CLIENT_SECRET": "s3cret",
}


def test_no_issuer_means_no_provider() -> None:
    assert read_config({}) is None


def test_the_provider_is_read_from_the_environment() -> None:
    config = read_config({**ENV, "PIWEB_OIDC_TEAM_MAP": "eng=Engineering:editor, ops=Ops:viewer"})
    assert config is not None
    assert (config.issuer, config.name, config.groups_claim) == (
        "https://id.example.com/realms/team",
        "Sign in with SSO",
        "groups",
    )
    assert config.teams_for(["ops", "eng", "other"]) == {"Engineering": "editor", "Ops": "viewer"}
    assert config.teams_for("eng") == {} and config.teams_for(None) == {}


def test_a_missing_secret_is_named() -> None:
    with pytest.raises(ConfigError, match="PIWEB_OIDC_CLIENT_SECRET"):
        read_config({k: v for k, v in ENV.items() if k != "PIWEB_OIDC_CLIENT_SECRET"})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("eng", "is not group=Team:role"),
        ("eng=Engineering", "needs a role"),
        ("eng=Eng:admin", "needs a role"),
    ],
)
def test_a_bad_team_map_is_refused_naming_the_item(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_team_map(text)


def test_the_highest_role_wins_when_groups_share_a_team() -> None:
    grants = parse_team_map("eng=Engineering:viewer,leads=Engineering:owner,ops=Ops:editor")
    config = OidcConfig(issuer="https://x", client_id="c", client_secret="s", team_map=grants)
    assert config.teams_for(["eng", "leads"]) == {"Engineering": "owner"}
    assert config.managed_teams == {"Engineering", "Ops"}


def test_without_a_provider_the_page_signs_in_with_a_password_only(db: None) -> None:
    page = Client().get("/accounts/login/").content.decode()
    assert 'id="password-form"' in page and 'id="sso-form"' not in page


def test_switched_off_passwords_leave_only_the_provider(db: None, settings: Any, user: Any) -> None:
    user("alice", password="pw-alice-123")
    settings.PIWEB_PASSWORD_LOGIN = False
    settings.OIDC_SIGN_IN = read_config({**ENV, "PIWEB_OIDC_NAME": "Sign in with Example"})
    client = Client()
    answer = client.get("/accounts/login/")
    page = answer.content.decode()
    assert 'id="password-form"' not in page and "Sign in with Example" in page
    assert "form-action 'self' https://id.example.com;" in answer["Content-Security-Policy"]
    refused = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert refused.status_code == 403 and "Password sign-in is turned off" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    token = client.post(
        "/api/token/", {"username": "alice", "password": "pw-alice-123"}, content_type="application/json"
    )
    assert token.status_code == 403 and "/tokens/" in token.json()["error"]
