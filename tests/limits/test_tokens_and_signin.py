"""API tokens are hashed, named, expiring and revocable; failed sign-ins are throttled."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from sessions_app.models import ApiToken


def _get(token: str, prefix: str = "Bearer") -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{prefix} {token}")
    return client.get("/api/sessions/").status_code


def test_a_token_is_shown_once_and_stored_only_as_a_hash(user: Any) -> None:
    user("alice", password="s3cret-pass")
    response = APIClient().post(
        "/api/token/", {"username": "alice", "password": "s3cret-pass", "name": "laptop"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    token = body["token"]
    assert body["name"] == "laptop" and body["expiry"] is not None
    stored = ApiToken.objects.get(user__username="alice")
    assert token not in (stored.digest, stored.token_key) and stored.token_key == token[:15]
    assert _get(token, "Bearer") == 200
    assert _get(token, "Token") == 200


def test_each_device_gets_its_own_token_and_one_can_be_revoked_alone(user: Any) -> None:
    owner = user("bob")
    _, laptop = ApiToken.objects.create(user=owner, name="laptop")
    _, ci = ApiToken.objects.create(user=owner, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {laptop}")
    listed = client.get("/api/tokens/").json()["results"]
    assert sorted(t["name"] for t in listed) == ["ci", "laptop"]
    assert all("token" not in t for t in listed)
    assert client.delete(f"/api/tokens/{ci[:15]}/").status_code == 204
    assert _get(ci) == 401 or _get(ci) == 403
    assert _get(laptop) == 200
    assert client.delete(f"/api/tokens/{ci[:15]}/").status_code == 404


def test_an_expired_token_no_longer_works(user: Any) -> None:
    owner = user()
    _, fresh = ApiToken.objects.create(user=owner, expiry=timedelta(days=1))
    _, expired = ApiToken.objects.create(user=owner, expiry=timedelta(seconds=-1))
    assert _get(fresh) == 200
    assert _get(expired) in (401, 403)


@pytest.mark.parametrize("header", ["Bearer \x00abc", "Bearer zz", "Token a b", "Bearer " + "f" * 300])
def test_a_malformed_token_is_refused_without_a_server_error(header: str, db: None) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/sessions/")
    assert response.status_code in (401, 403)
    assert "error" in response.json()


def test_create_api_token_prints_a_working_token_each_time(db: None) -> None:
    first, second = StringIO(), StringIO()
    call_command("create_api_token", "carol", "--name", "ci", stdout=first)
    call_command("create_api_token", "carol", stdout=second)
    tokens = [first.getvalue().strip(), second.getvalue().strip()]
    assert tokens[0] != tokens[1]
    assert all(_get(t) == 200 for t in tokens)
    assert ApiToken.objects.filter(user__username="carol", name="ci").count() == 1


@override_settings(PIWEB_LOGIN_RATE_PER_CLIENT="100/min", PIWEB_LOGIN_RATE_PER_USERNAME="3/min")
def test_password_guesses_for_one_user_are_throttled_with_a_retry_time(user: Any) -> None:
    user("dave", password="right-password")
    client = APIClient()
    for _ in range(3):
        wrong = client.post("/api/token/", {"username": "dave", "password": "wrong"}, format="json")
        assert wrong.status_code == 400
    refused = client.post("/api/token/", {"username": "dave", "password": "right-password"}, format="json")
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert refused.json()["retryAfter"] == int(refused["Retry-After"])
    assert "Too many failed sign-ins" in refused.json()["error"]
    # Another name from another client is not affected.
    user("erin", password="right-password")
    other = APIClient(REMOTE_ADDR="10.0.0.9")
    assert other.post("/api/token/", {"username": "erin", "password": "right-password"}).status_code == 200


@override_settings(PIWEB_LOGIN_RATE_PER_CLIENT="3/min", PIWEB_LOGIN_RATE_PER_USERNAME="100/min")
def test_one_client_guessing_many_names_is_throttled(user: Any) -> None:
    client = APIClient()
    for name in ("n1", "n2", "n3"):
        assert (
            client.post("/api/token/", {"username": name, "password": "x"}, format="json").status_code == 400
        )
    assert client.post("/api/token/", {"username": "n4", "password": "x"}, format="json").status_code == 429


@override_settings(PIWEB_LOGIN_RATE_PER_CLIENT="100/min", PIWEB_LOGIN_RATE_PER_USERNAME="2/min")
def test_the_login_page_is_throttled_too(client: Any, user: Any) -> None:
    user("frank", password="right-password")
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "frank", "password": "no"}).status_code == 200
    refused = client.post("/accounts/login/", {"username": "frank", "password": "right-password"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert b"Too many failed sign-ins" in refused.content


@override_settings(PIWEB_LOGIN_RATE_PER_CLIENT="100/min", PIWEB_LOGIN_RATE_PER_USERNAME="2/min")
def test_staff_sign_in_to_the_admin_only_where_guesses_are_throttled(client: Any, user: Any) -> None:
    user("root", password="right-password", is_staff=True, is_superuser=True)
    # The admin's own form is gone: a password posted there signs nobody in and counts nowhere.
    for _ in range(5):
        answer = client.post("/admin/login/?next=/admin/", {"username": "root", "password": "right-password"})
        assert (answer.status_code, answer["Location"]) == (302, "/accounts/login/?next=%2Fadmin%2F")
    assert client.get("/admin/").status_code == 302
    # Guesses on the one sign-in page count; past the limit the right password waits too.
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "root", "password": "no"}).status_code == 200
    refused = client.post("/accounts/login/?next=/admin/", {"username": "root", "password": "right-password"})
    assert refused.status_code == 429
    assert client.get("/admin/").status_code == 302


@override_settings(PIWEB_PASSWORD_LOGIN=False)
def test_with_password_sign_in_off_staff_cannot_sign_in_to_the_admin_with_a_password(
    client: Any, user: Any
) -> None:
    user("root", password="right-password", is_staff=True, is_superuser=True)
    for url in ("/admin/login/?next=/admin/", "/accounts/login/?next=/admin/"):
        client.post(url, {"username": "root", "password": "right-password"})
    assert client.get("/admin/").status_code == 302
    assert "/admin/login/" in client.get("/admin/")["Location"]
