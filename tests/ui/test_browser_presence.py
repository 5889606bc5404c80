"""Two people on one session in real browsers: each sees the other and the node they are on, a closed
tab disappears, and the tree filters entries by who wrote them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def team_session(owner: Any, member: Any) -> ChatSession:
    """Return a session of ``owner`` shared for editing with a team ``member`` belongs to."""
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=member, role="editor")
    session = services.import_jsonl(
        actor=owner, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    return session


def open_session(page: Any, server_url: str, session: ChatSession) -> Any:
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    return page


def test_two_people_see_each_other_and_where_they_are_and_a_closed_tab_goes(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    eddie, ada = account("eddie"), account("ada")
    session = team_session(eddie, ada)
    mine = open_session(sign_in(open_browser(), "eddie"), server_url, session)
    theirs = open_session(sign_in(open_browser(), "ada"), server_url, session)

    # Each sees the other in the header, and themselves marked as "you".
    expect(mine.locator('#presence [data-person="ada"]')).to_be_visible()
    expect(mine.locator('#presence .avatar.you[data-person="eddie"]')).to_be_visible()
    expect(theirs.locator('#presence [data-person="eddie"]')).to_be_visible()

    # Ada selects u2: her initials appear at that row in Eddie's tree, and follow her to u1.
    theirs.locator('.tree-row[data-id="u2"]').click()
    expect(mine.locator('.tree-row[data-id="u2"] .presence-marks [data-person="ada"]')).to_be_visible()
    expect(mine.locator('.tree-row[data-id="u2"] .presence-marks')).to_have_text("AD")
    screenshot(mine, "presence-two-people")
    theirs.locator('.tree-row[data-id="u1"]').click()
    expect(mine.locator('.tree-row[data-id="u1"] .presence-marks [data-person="ada"]')).to_be_visible()
    expect(mine.locator('.tree-row[data-id="u2"] .presence-marks')).to_have_count(0)
    # Eddie's own place is not marked in his tree (he knows where he is).
    expect(mine.locator(".presence-marks [data-person='eddie']")).to_have_count(0)

    # Ada closes her tab: she is gone from Eddie's page within a few seconds.
    closed = time.monotonic()
    theirs.close()
    expect(mine.locator('#presence [data-person="ada"]')).to_have_count(0, timeout=5000)
    gone_after = time.monotonic() - closed
    expect(mine.locator(".presence-marks")).to_have_count(0)
    print(f"closed tab gone after {gone_after:.2f} s")
    assert gone_after < 5


def test_the_tree_filters_entries_by_who_wrote_them_and_cards_name_the_author(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    eddie, ada = account("eddie"), account("ada")
    session = team_session(eddie, ada)
    services.append_entries(
        session=session,
        entries=[
            {"type": "message", "message": {"role": "user", "content": "ada asks", "timestamp": 1}},
            {"type": "message", "message": {"role": "user", "content": "ada again", "timestamp": 2}},
        ],
        actor=ada,
    )
    session.refresh_from_db()
    mine_entry = user_message("e1", session.leaf_entry_id, "eddie's word")
    services.append_entries(session=session, entries=[mine_entry], actor=eddie)
    page = open_session(sign_in(open_browser(), "eddie"), server_url, session)
    rows = page.locator("#tree-scroll .tree-row[data-id]")
    expect(rows).to_have_count(9)

    page.select_option("#tree-filter", label="By ada")
    # Ada's two entries and the leaf (always drawn).
    expect(rows).to_have_count(3)
    expect(page.locator("#tree-scroll .tree-rows")).to_contain_text("ada asks")
    expect(page.locator("#tree-scroll .tree-rows")).not_to_contain_text("hello there")
    screenshot(page, "attribution-filter-by-ada")

    page.select_option("#tree-filter", label="Mine")
    # The imported six and Eddie's own append.
    expect(rows).to_have_count(7)
    expect(page.locator("#tree-scroll .tree-rows")).not_to_contain_text("ada asks")

    # The cards of the branch say who wrote each entry.
    branch = page.locator("#branch")
    expect(branch.locator(f'[data-id="{session.leaf_entry_id}"] .author')).to_have_text("by eddie")
    expect(branch.locator(".author", has_text="by ada")).to_have_count(2)
    expect(branch.locator(".author", has_text="imported by eddie")).to_have_count(4)
