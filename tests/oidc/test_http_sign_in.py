"""Sign-in with a real OpenID Connect provider, over plain HTTP (httpx following redirects)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from django.contrib.auth import get_user_model

from actionlog.models import ActionLog
from teams.models import TeamMembership

from .conftest import OidcStack, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_first_sign_in_creates_the_user_with_pkce_and_a_nonce(oidc_stack: OidcStack) -> None:
    oidc_stack.provider.person("alice", "alice@example.com", ["eng"])
    requests: list[httpx.URL] = []
    client = httpx.Client(
        follow_redirects=True, timeout=20, event_hooks={"request": [lambda r: requests.append(r.url)]}
    )
    http, answer = sign_in(oidc_stack, "alice", client=client)

    assert answer.status_code == 200 and answer.url.port == oidc_stack.piweb.port
    assert answer.url.path == "/"
    me = http.get(f"{oidc_stack.piweb.base_url}/api/sessions/")
    assert me.status_code == 200
    alice = get_user_model().objects.get(email="alice@example.com")
    assert alice.username == "alice" and not alice.has_usable_password()
    authorize = next(u for u in requests if u.path == "/openid/authorize")
    query = parse_qs(urlparse(str(authorize)).query)
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["nonce"][0] and query["state"][0]


def test_groups_decide_team_memberships_at_every_sign_in(oidc_stack: OidcStack) -> None:
    oidc_stack.provider.person("bob", "bob@example.com", ["eng", "ops"])
    sign_in(oidc_stack, "bob")
    bob = get_user_model().objects.get(username="bob")
    roles = dict(TeamMembership.objects.filter(user=bob).values_list("team__name", "role"))
    assert roles == {"Engineering": "editor", "Ops": "viewer"}

    # Promoted to the leads group and out of ops: the next sign-in follows.
    oidc_stack.provider.person("bob", "bob@example.com", ["eng", "leads"])
    sign_in(oidc_stack, "bob")
    roles = dict(TeamMembership.objects.filter(user=bob).values_list("team__name", "role"))
    assert roles == {"Engineering": "owner"}
    logged = ActionLog.objects.filter(action="team_sync", actor_name="identity-provider")
    changes = sorted((row.team_label, row.detail["change"], row.detail["role"]) for row in logged)
    assert changes == [
        ("Engineering", "joined", "editor"),
        ("Engineering", "role", "owner"),
        ("Ops", "joined", "viewer"),
        ("Ops", "left", "viewer"),
    ]


def test_an_existing_account_is_linked_by_verified_email_only(oidc_stack: OidcStack, user) -> None:
    carol = user("carol", email="carol@example.com")
    oidc_stack.provider.person("carol-sso", "carol@example.com", [], verified=False)
    http, answer = sign_in(oidc_stack, "carol-sso")
    assert answer.status_code == 403
    # Nothing on the page tells the person signing in that someone else's account holds that address.
    assert "carol" not in answer.text.lower() and "exists" not in answer.text
    assert "not say your email address is verified" in answer.text
    assert get_user_model().objects.filter(email="carol@example.com").count() == 1
    assert http.get(f"{oidc_stack.piweb.base_url}/api/sessions/").status_code in (401, 403)

    oidc_stack.provider.person("carol-sso", "carol@example.com", [], verified=True)
    http, answer = sign_in(oidc_stack, "carol-sso")
    assert answer.status_code == 200 and answer.url.path == "/"
    assert get_user_model().objects.filter(email="carol@example.com").count() == 1
    assert "carol" in http.get(f"{oidc_stack.piweb.base_url}/").text
    carol.refresh_from_db()
    assert carol.has_usable_password()  # the staff-made account keeps its password


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("tamper", "does not match its signing keys"),
        ("expired", "has expired"),
        ("issuer", "not by http://127.0.0.1"),
        ("nonce", "nonce differs"),
    ],
)
def test_a_bad_id_token_is_refused_with_a_clear_page_and_creates_no_user(
    oidc_stack: OidcStack, mode: str, says: str
) -> None:
    oidc_stack.provider.person("mallory", "mallory@example.com", ["eng"])
    oidc_stack.provider.misbehave(mode)
    http, answer = sign_in(oidc_stack, "mallory")
    assert answer.status_code == 401, answer.text[:500]
    assert "Sign-in refused" in answer.text and says in answer.text
    assert not get_user_model().objects.filter(email="mallory@example.com").exists()
    assert not TeamMembership.objects.filter(team__name="Engineering").exists()
    assert http.get(f"{oidc_stack.piweb.base_url}/api/sessions/").status_code in (401, 403)


def test_a_deactivated_account_is_refused(oidc_stack: OidcStack) -> None:
    oidc_stack.provider.person("ivan", "ivan@example.com", ["eng"])
    sign_in(oidc_stack, "ivan")
    get_user_model().objects.filter(username="ivan").update(is_active=False)
    http, answer = sign_in(oidc_stack, "ivan")
    assert answer.status_code == 403 and "This account is deactivated" in answer.text
    assert http.get(f"{oidc_stack.piweb.base_url}/api/sessions/").status_code in (401, 403)


def test_an_answer_with_an_unknown_state_is_refused(oidc_stack: OidcStack) -> None:
    oidc_stack.provider.person("dave", "dave@example.com", [])
    http = httpx.Client(follow_redirects=False, timeout=20)
    page = http.get(f"{oidc_stack.piweb.base_url}/accounts/oidc/sso/login/callback/?code=abc&state=forged")
    assert page.status_code == 401
    assert "does not belong to a sign-in started in this browser" in page.text
    assert not get_user_model().objects.filter(email="dave@example.com").exists()
