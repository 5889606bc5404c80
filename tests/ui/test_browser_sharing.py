"""Sharing in a real browser: a team viewer cannot act, and a revoked link stops an open page live."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from core import realtime
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def shared_session(owner: Any) -> ChatSession:
    return services.import_jsonl(
        actor=owner, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session


FORGED_NAVIGATE = """async ([pk, token]) => {
  const csrf = (document.cookie.match(/csrftoken=([^;]+)/) || [])[1] || "";
  const headers = {"Content-Type": "application/json", "X-CSRFToken": csrf};
  if (token) headers["X-Share-Token"] = token;
  const body = '{"targetId":"a2"}';
  const r = await fetch(`/api/sessions/${pk}/navigate/`, {method: "POST", headers, body});
  return r.status;
}"""
READ = """async ([pk, token]) => {
  const r = await fetch(`/api/sessions/${pk}/`, {headers: {"X-Share-Token": token}});
  return r.status;
}"""


def test_a_team_viewer_sees_the_session_but_cannot_act(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner, viewer = account("olga"), account("vic")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=viewer, role="viewer")
    session = shared_session(owner)
    services.share_with_team(session=session, team=team, access="editor", actor=owner)

    page = sign_in(open_browser(), "vic")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    page.locator('.tree-row[data-id="u2"]').click()
    for action in ("navigate", "label", "compact"):
        expect(page.locator(f'#node-actions button[data-action="{action}"]')).to_be_disabled()
    expect(page.locator("#composer-text")).to_be_disabled()
    expect(page.locator("#composer-send")).to_be_disabled()
    assert page.locator("#sharing-button").count() == 0
    expect(page.locator(".session-bar")).to_contain_text("view only")
    screenshot(page, "sharing-team-viewer")
    # The disabled buttons are not the protection: a hand-made request is refused too.
    assert page.evaluate(FORGED_NAVIGATE, [session.pk, None]) == 403
    session.refresh_from_db()
    assert session.leaf_entry_id == "a3"


def test_a_revoked_link_stops_an_open_page_live(
    account: Any, open_browser: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("olga")
    session = shared_session(owner)
    link = services.create_share_link(session=session, actor=owner)

    page = open_browser().new_page()
    page.goto(f"{server_url}/s/{link.raw_token}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator('.tree-row[data-id="a3"]')).to_be_visible()
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#node-actions")).to_be_hidden()
    expect(page.locator("#composer-text")).to_be_disabled()
    assert page.evaluate(READ, [session.pk, link.raw_token]) == 200
    assert page.evaluate(FORGED_NAVIGATE, [session.pk, link.raw_token]) == 403
    screenshot(page, "sharing-link-open")

    services.revoke_share_link(link=link, actor=owner)
    realtime.flush()
    expect(page.locator("body[data-revoked=true]")).to_have_count(1)
    expect(page.locator("#live-status")).to_have_text("access ended")
    expect(page.locator("#error-banner")).to_contain_text("revoked")
    assert page.evaluate(READ, [session.pk, link.raw_token]) == 404
    screenshot(page, "sharing-link-revoked")
