"""Review in two browsers: Olga asks Eddie to review the branch her page shows, Eddie finds it in his
queue and approves it, the list shows the session approved, and a new entry on that branch marks the
review outdated on the session page and in the list."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree, user_message

from .conftest import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_request_approve_then_a_new_entry_outdates_the_review(
    server_url: str, account: Any, open_browser: Any, screenshot: Any
) -> None:
    olga, eddie = account("olga"), account("eddie")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=olga, role="owner")
    TeamMembership.objects.create(team=team, user=eddie, role="editor")
    session = services.import_jsonl(
        actor=olga, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session
    services.share_with_team(session=session, team=team, access="editor", actor=olga)

    # Olga asks for a review of the branch ending at a2, the node her page shows.
    a = signed_in(open_browser(), server_url, "olga")
    a.goto(f"{server_url}/sessions/{session.pk}/#entry=a2")
    a.wait_for_selector("body[data-ready=true]")
    a.click("#review-status")
    expect(a.locator("#reviews-empty")).to_be_visible()
    a.fill("#review-request input[name=reviewers]", "eddie")
    a.fill("#review-request input[name=note]", "is the parser right?")
    a.click("#review-request button[type=submit]")
    article = a.locator("#reviews article.review")
    expect(article).to_have_attribute("data-status", "pending")
    expect(article).to_contain_text("the branch at a2")
    expect(a.locator("#review-status")).to_have_text("review pending")
    expect(a.locator("#live-status")).to_have_attribute("data-state", "live")

    # Eddie sees it waiting for him, in the queue and his inbox, and approves it with a note.
    b = signed_in(open_browser(), server_url, "eddie")
    expect(b.locator("#inbox-count")).to_have_text("1")
    b.goto(f"{server_url}/reviews/")
    expect(b.locator("#queue-mine tbody tr")).to_have_count(1)
    expect(b.locator("#queue-others .empty")).to_be_visible()
    b.locator("#queue-mine tbody tr a").first.click()
    b.wait_for_selector("body[data-ready=true]")
    b.click("#review-status")
    b.fill("#reviews form.review-decide input[name=note]", "reads well")
    b.click("#reviews form.review-decide button[value=approved]")
    expect(b.locator("#reviews article.review")).to_have_attribute("data-status", "approved")
    expect(b.locator('#reviews [data-reviewer="eddie"]')).to_contain_text("reads well")
    # Olga's open page hears of it and shows the decision when asked.
    a.click("#reviews-changed")
    expect(a.locator("#reviews article.review")).to_have_attribute("data-status", "approved")

    # The list shows it approved; the filter finds it.
    a.goto(f"{server_url}/?review=approved")
    row = a.locator(f'tr[data-session-id="{session.pk}"]')
    expect(row.locator(".badge-review-approved")).to_have_text("approved")
    screenshot(a, "reviews-list-approved")

    # A new entry below a2 (the reviewed branch) makes the review outdated.
    services.append_entries(session=session, entries=[user_message("n1", "a2", "one more thing")], actor=olga)
    a.goto(f"{server_url}/sessions/{session.pk}/")
    a.wait_for_selector("body[data-ready=true]")
    expect(a.locator("#reviews .review-outdated")).to_contain_text("new entries were added to this branch")
    expect(a.locator("#review-status")).to_have_text("review outdated")
    screenshot(a, "reviews-outdated")
    a.goto(f"{server_url}/")
    expect(a.locator(f'tr[data-session-id="{session.pk}"] .badge-review-outdated')).to_have_text(
        "review outdated"
    )
    # Eddie can no longer approve what changed; Olga may ask again.
    b.reload()
    b.wait_for_selector("body[data-ready=true]")
    expect(b.locator("#reviews form.review-decide")).to_have_count(0)
