"""In Chromium: the owner sees which entries hold secrets, redacts them, and sees who opened a link."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from governance.models import SecretFinding
from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file
from tests.governance.test_secrets import AWS_KEY, GITHUB_TOKEN, leaky_entries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_the_owner_sees_marked_entries_and_redacts_them(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner, mate = account("olga"), account("max")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=mate, role="editor")
    data = session_file(leaky_entries(), {**HEADER, "id": "leaky"})
    session = services.import_jsonl(actor=owner, data=data, filename="leaky.jsonl").session
    services.share_with_team(session=session, team=team, access="viewer", actor=owner)

    page = sign_in(open_browser(), "olga")
    expect(page.locator(f'tr[data-session-id="{session.pk}"] .badge.secret')).to_have_text("3 secrets")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#secrets-button")).to_have_text("3 secrets…")
    for entry in ("t1", "t2", "u2"):
        expect(page.locator(f'.tree-row[data-id="{entry}"] .badge.secret')).to_be_visible()
    expect(page.locator('.tree-row[data-id="a2"] .badge.secret')).to_have_count(0)
    page.click("#secrets-button")
    expect(page.locator("#secrets-list li")).to_have_count(3)
    expect(page.locator("#secrets-dialog")).not_to_contain_text(AWS_KEY)
    screenshot(page, "governance-secrets")
    page.locator('#secrets-list li:has-text("github-token") button.danger').click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#secrets-button")).to_have_text("2 secrets…")
    assert SecretFinding.objects.filter(redacted_at__isnull=True).count() == 2
    page.click("#secrets-button")
    page.click("#secrets-redact-all")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#secrets-button")).to_be_hidden()
    expect(page.locator(".tree-row .badge.secret")).to_have_count(0)
    page.locator('.tree-row[data-id="u2"]').click()
    expect(page.locator("#panels")).to_contain_text("[REDACTED:github-token]")
    expect(page.locator("#panels")).not_to_contain_text(GITHUB_TOKEN)

    # A teammate never gets the findings, nor the button.
    teammate = sign_in(open_browser(), "max")
    teammate.goto(f"{server_url}/sessions/{session.pk}/")
    teammate.wait_for_selector("body[data-ready=true]")
    assert teammate.locator("#secrets-button").count() == 0


def test_the_links_page_says_who_opened_a_link(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("olga")
    session = services.import_jsonl(
        actor=owner, data=session_file(leaky_entries(), {**HEADER, "id": "s"}), filename="s.jsonl"
    ).session
    link = services.create_share_link(session=session, actor=owner)
    visitor = open_browser().new_page()
    visitor.goto(f"{server_url}/s/{link.raw_token}/")
    visitor.wait_for_selector("body[data-ready=true]")
    page = sign_in(open_browser(), "olga")
    page.goto(f"{server_url}/links/")
    page.wait_for_selector("body[data-ready=true]")
    page.click(f'.show-views[data-link-id="{link.pk}"]')
    views = page.locator(f'tr[data-link-id="{link.pk}"] .views')
    expect(views).to_contain_text("Opened once")
    expect(views).to_contain_text("anonymous · 1×")
