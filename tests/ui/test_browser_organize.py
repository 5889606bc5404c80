"""Organizing sessions in a real browser: a pin star, a team tag made on the tags page, put on from the
session page and followed from its badge, archive and restore, a bulk archive that previews what it will
do, and a saved filter."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from organize.models import Tag
from organize.services import apply_tag, remove_tag
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _session(owner: Any, pi_id: str, name: str, team: Team | None = None) -> int:
    data = session_file(small_tree(), {**HEADER, "id": pi_id})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session
    services.rename_session(session=session, name=name, actor=owner)
    if team is not None:
        services.share_with_team(session=session, team=team, access="editor", actor=owner)
    return int(session.pk)


def _names(page: Any) -> Any:
    return page.locator("table.sessions tbody .session-link")


def test_pin_tag_archive_and_a_bulk_archive_with_its_preview(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("olga")
    team = Team.objects.create(name="Platform")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    alpha = _session(owner, "alpha", "alpha invoices", team)
    _session(owner, "beta", "beta search", team)
    _session(owner, "gamma", "gamma notes")

    page = sign_in(open_browser(), "olga")
    # The team's owner makes a tag on the tags page.
    page.locator("#tags-link").click()
    page.wait_for_selector("body[data-ready=true]")
    page.fill(".tag-create input[name=name]", "billing")
    page.select_option(".tag-create select[name=colour]", "blue")
    page.locator(".tag-create button[type=submit]").click()
    expect(page.locator(".tag-row a.tag")).to_have_text(["billing"])
    screenshot(page, "organize-tags-page")
    assert Tag.objects.get().colour == "blue"
    page.goto(f"{server_url}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    expect(_names(page)).to_have_count(3)

    # Pin: the star fills, and the pinned filter shows that session alone.
    star = page.locator(f'tr[data-session-id="{alpha}"] .pin-star')
    star.click()
    expect(star).to_have_attribute("aria-pressed", "true")
    page.goto(f"{server_url}/?pinned=1")
    expect(_names(page)).to_have_text(["alpha invoices"])
    expect(page.locator(f'tr[data-session-id="{alpha}"] .pin-star')).to_have_attribute("aria-pressed", "true")

    # Tag from the session page; the list shows the badge, which opens the list filtered by it.
    page.goto(f"{server_url}/sessions/{alpha}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    page.select_option("#add-tag", label="billing (Platform)")
    expect(page.locator("#session-tags .session-tag")).to_have_text(["billing×"])
    screenshot(page, "organize-session-bar")
    # A tag taken off elsewhere leaves the open page at once, and comes back the same way.
    page.wait_for_selector("#live-status[data-state=live]")
    session, tag = ChatSession.objects.get(pk=alpha), Tag.objects.get()
    remove_tag(actor=owner, session=session, tag=tag)
    expect(page.locator("#session-tags .session-tag")).to_have_count(0)
    apply_tag(actor=owner, session=session, tag=tag)
    expect(page.locator("#session-tags .session-tag")).to_have_text(["billing×"])
    page.goto(f"{server_url}/")
    badge = page.locator(f'tr[data-session-id="{alpha}"] a.tag', has_text="billing")
    expect(badge).to_be_visible()
    screenshot(page, "organize-list-tag-and-pin")
    badge.click()
    expect(_names(page)).to_have_text(["alpha invoices"])

    # Archive from the session page: gone from the default list, found with the filter, restored.
    page.goto(f"{server_url}/sessions/{alpha}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    page.locator("#archive-button").click()
    expect(page.locator("#archive-button")).to_have_text("Restore")
    page.goto(f"{server_url}/?sort=name")
    expect(_names(page)).to_have_text(["beta search", "gamma notes"])
    page.goto(f"{server_url}/?archived=only")
    expect(_names(page)).to_have_text(["alpha invoices"])
    page.goto(f"{server_url}/?q=invoices&archived=include")
    expect(_names(page)).to_have_text(["alpha invoices"])
    page.goto(f"{server_url}/sessions/{alpha}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    page.locator("#archive-button").click()
    expect(page.locator("#archive-button")).to_have_text("Archive")
    page.goto(f"{server_url}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    expect(_names(page)).to_have_count(3)

    # Bulk archive two sessions: the preview says what will change and nothing has yet.
    for name in ("beta search", "gamma notes"):
        page.get_by_role("checkbox", name=f"Select {name}").check()
    expect(page.locator("#bulk-count")).to_have_text("2 sessions selected")
    page.locator('#bulk-bar button[data-bulk="archive"]').click()
    expect(page.locator("#bulk-preview .bulk-change")).to_have_text("2 sessions will change.")
    screenshot(page, "organize-bulk-preview")
    page.locator("#bulk-dialog").get_by_role("button", name="Cancel").click()
    page.reload()
    expect(_names(page)).to_have_count(3)
    for name in ("beta search", "gamma notes"):
        page.get_by_role("checkbox", name=f"Select {name}").check()
    page.locator('#bulk-bar button[data-bulk="archive"]').click()
    expect(page.locator("#bulk-preview .bulk-change")).to_have_text("2 sessions will change.")
    page.locator("#bulk-run").click()
    expect(page.locator("#bulk-preview .bulk-change")).to_have_text("2 sessions changed.")
    page.locator("#bulk-dialog").get_by_role("button", name="Close").click()
    expect(_names(page)).to_have_text(["alpha invoices"])
    page.goto(f"{server_url}/?archived=only&sort=name")
    expect(_names(page)).to_have_text(["beta search", "gamma notes"])

    # Save this list as a filter; opening it from the menu on the default list comes back here.
    page.wait_for_selector("body[data-organize-ready=true]")
    page.locator("#saved-filters summary").click()
    page.fill("#save-filter-form input[name=name]", "Archived work")
    page.locator("#save-filter-form button[type=submit]").click()
    expect(page.locator("#saved-filters summary")).to_have_text("Saved filters (1)")
    page.goto(f"{server_url}/")
    page.locator("#saved-filters summary").click()
    page.get_by_role("link", name="Archived work").click()
    expect(_names(page)).to_have_text(["beta search", "gamma notes"])


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_organize_parts_pass_axe(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, axe: Any, scheme: str
) -> None:
    owner = account("olga")
    team = Team.objects.create(name="Platform")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    tag = Tag.objects.create(team=team, name="billing", colour="green")
    alpha = _session(owner, "alpha", "alpha invoices", team)
    tag.applied.create(session_id=alpha)
    _session(owner, "beta", "beta search", team)
    page = sign_in(open_browser(color_scheme=scheme), "olga")
    page.wait_for_selector("body[data-organize-ready=true]")
    page.locator(f'tr[data-session-id="{alpha}"] .pin-star').click()
    expect(page.locator(f'tr[data-session-id="{alpha}"] .pin-star')).to_have_attribute("aria-pressed", "true")
    page.locator("#saved-filters summary").click()
    page.locator("#select-all").check()
    problems = {"list": axe(page)}
    page.locator('#bulk-bar button[data-bulk="tag"]').click()
    expect(page.locator("#bulk-preview .bulk-change")).to_be_visible()
    problems["bulk-dialog"] = axe(page)
    page.goto(f"{server_url}/sessions/{alpha}/")
    page.wait_for_selector("body[data-organize-ready=true]")
    problems["session"] = axe(page)
    page.goto(f"{server_url}/tags/")
    page.wait_for_selector("body[data-ready=true]")
    problems["tags"] = axe(page)
    found = {k: v for k, v in problems.items() if v}
    assert found == {}, json.dumps(found, indent=1)
