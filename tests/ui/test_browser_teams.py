"""Teams in a real browser: the invitee sees the team's name, owners see and withdraw pending
invitations, and the team page lists and searches the team's sessions."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from teams import services as team_services
from teams.models import Team, TeamInvitation, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_an_invitation_names_its_team_and_the_owner_can_withdraw_it(
    account: Any,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
    screenshot: Any,
) -> None:
    owner, _ = account("olga"), account("bob")
    team = team_services.create_team(actor=owner, name="Platform")

    owner_page = sign_in(open_browser(), "olga")
    owner_page.goto(f"{server_url}/teams/")
    owner_page.wait_for_selector("body[data-ready=true]")
    owner_page.locator(f'[data-team="{team.pk}"] .invite-button').click()
    owner_page.fill("#invite-dialog input[name=username]", "bob")
    owner_page.locator("#invite-dialog button[type=submit]").click()
    pending = owner_page.locator(f'[data-team="{team.pk}"] .pending-invitations li')
    expect(pending).to_have_count(1)
    expect(pending).to_contain_text("bob · as viewer · by olga")

    bob_page = sign_in(open_browser(), "bob")
    bob_page.goto(f"{server_url}/teams/")
    invitation = bob_page.locator("#invitation-list li")
    expect(invitation).to_have_count(1)
    expect(invitation.locator(".invitation-text")).to_have_text("Platform · as viewer · from olga")
    screenshot(bob_page, "teams-invitation-named")

    pending.get_by_role("button", name="Withdraw").click()
    expect(owner_page.locator(f'[data-team="{team.pk}"] .pending-invitations li')).to_have_count(0)
    assert not TeamInvitation.objects.filter(team=team).exists()
    bob_page.reload()
    bob_page.wait_for_selector("body[data-ready=true]")
    expect(bob_page.locator("#invitations")).to_be_hidden()


def test_the_team_page_lists_and_searches_the_teams_sessions(
    account: Any,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
) -> None:
    owner, reader = account("olga"), account("rita")
    team = Team.objects.create(name="Platform")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=reader, role="viewer")
    for pi_id, cwd in (("one", "/srv/billing"), ("two", "/srv/search")):
        data = session_file(small_tree(), {**HEADER, "id": pi_id, "cwd": cwd})
        session = services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session
        services.share_with_team(session=session, team=team, access="viewer", actor=owner)
    services.import_jsonl(
        actor=owner, data=session_file(small_tree(), {**HEADER, "id": "private"}), filename="p.jsonl"
    )

    page = sign_in(open_browser(), "rita")
    page.goto(f"{server_url}/teams/")
    page.get_by_role("link", name="Platform").click()
    page.wait_for_selector("body[data-ready=true]")
    rows = page.locator("#team-session-rows tr")
    expect(rows).to_have_count(2)
    page.fill("#team-search input[name=q]", "billing")
    page.locator("#team-search button[type=submit]").click()
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("/srv/billing")
    page.fill("#team-search input[name=q]", "nothing-like-it")
    page.locator("#team-search button[type=submit]").click()
    expect(page.locator("#team-sessions-empty")).to_contain_text("No session of this team matches")
    # The owner turns on sharing by default on the Teams page; the reader sees it said there.
    owner_page = sign_in(open_browser(), "olga")
    owner_page.goto(f"{server_url}/teams/")
    owner_page.wait_for_selector("body[data-ready=true]")
    owner_page.locator(f'[data-team="{team.pk}"] select.default-share').select_option("viewer")
    expect(owner_page.locator("#teams-note")).to_contain_text("now shared with Platform (viewer)")
    team.refresh_from_db()
    assert team.default_share == "viewer"
