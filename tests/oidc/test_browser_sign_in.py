"""Sign-in with the identity provider in Chromium, as a person clicks through it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from teams.models import TeamMembership
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, ensure_chromium

from .conftest import OidcStack

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    ensure_chromium()
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            tempfile.mkdtemp(prefix="piweb-chromium-"), executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        context.set_default_timeout(15000)
        yield context.new_page()
        context.close()


def _through_provider(page: Any, stack: OidcStack, name: str) -> None:
    page.goto(f"{stack.piweb.base_url}/teams/")
    page.get_by_role("button", name="Sign in with Example SSO").click()
    page.wait_for_url(f"{stack.provider.url}/accounts/login/**")
    page.fill("#provider-username", name)
    page.fill("#provider-password", f"pw-{name}")
    page.click("#provider-submit")


def test_sign_in_through_the_provider_in_chromium(oidc_stack: OidcStack, page: Any) -> None:
    oidc_stack.provider.person("frank", "frank@example.com", ["ops"])
    _through_provider(page, oidc_stack, "frank")
    page.wait_for_url(f"{oidc_stack.piweb.base_url}/teams/")
    assert page.locator(".topbar .who").inner_text().strip() == "frank"
    frank = get_user_model().objects.get(username="frank")
    assert TeamMembership.objects.get(user=frank).team.name == "Ops"
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("[data-team] h2").text_content() == "Ops"


def test_a_tampered_token_shows_the_refusal_in_chromium(oidc_stack: OidcStack, page: Any) -> None:
    oidc_stack.provider.person("grace", "grace@example.com", ["ops"])
    oidc_stack.provider.misbehave("tamper")
    _through_provider(page, oidc_stack, "grace")
    page.wait_for_selector("#signin-refused")
    assert "does not match its signing keys" in page.locator("#signin-refused").inner_text()
    assert not get_user_model().objects.filter(username="grace").exists()
    page.goto(f"{oidc_stack.piweb.base_url}/teams/")
    assert "/accounts/login/" in page.url
