"""Scripts calling the API with a token skip the session machinery; browsers keep all of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_token_request_reads_without_a_session_and_gets_no_cookie(user: Callable[..., Any]) -> None:
    owner = user()
    session = services.create_session(actor=owner, cwd="/w", name="mine")
    _, text = ApiToken.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {text}")
    response = client.get(f"/api/sessions/{session.pk}/")
    assert response.status_code == 200 and response.json()["owner"] == owner.username
    assert response.wsgi_request.user == owner
    assert not hasattr(response.wsgi_request, "session")
    assert response.cookies == {} and "Cookie" not in response.get("Vary", "")
    # A bad token is refused the same way as before.
    client.credentials(HTTP_AUTHORIZATION="Bearer " + "0" * 64)
    assert client.get(f"/api/sessions/{session.pk}/").status_code in (401, 403)


def test_a_request_with_a_session_cookie_keeps_the_session_user_first(user: Callable[..., Any]) -> None:
    """A browser signed in as one user, sending another user's token: the session decides, as before."""
    browser_user, script_user = user("browser"), user("script")
    browser_token, _ = ApiToken.objects.create(user=browser_user, name="browser's")
    _, script_text = ApiToken.objects.create(user=script_user, name="script's")
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(browser_user)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {script_text}")
    response = client.get("/api/tokens/")
    assert [t["name"] for t in response.json()["results"]] == ["browser's"]
    assert hasattr(response.wsgi_request, "session")
    # ...and a cookie-authenticated change still needs its CSRF token.
    refused = client.delete(f"/api/tokens/{browser_token.token_key}/")
    assert refused.status_code == 403 and "CSRF" in refused.json()["error"]
    assert ApiToken.objects.filter(pk=browser_token.pk).exists()


def test_pages_with_an_authorization_header_still_have_sessions(user: Callable[..., Any]) -> None:
    _, text = ApiToken.objects.create(user=user())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {text}")
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(settings.LOGIN_URL)
    assert hasattr(response.wsgi_request, "session")
