"""In Chromium, the small things people notice: counts in good English, Markdown read as text in previews,
no empty headings, and a usage chart that makes sense with a single day of data."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import expect

from discussion import services as discussion_services
from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, assistant_message, session_file, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def _show_tree(page: Any, phone: bool) -> None:
    if phone:  # a phone shows one panel at a time
        page.click(".panel-tabs button[data-panel=tree]")


def _session(owner: Any, pi_id: str = "s") -> Any:
    entries = [
        user_message("u1", None, "**Why** does `make` fail on _staging_?"),
        assistant_message("a1", "u1", "Because of the [cache](https://example.com/cache)."),
    ]
    return services.import_jsonl(actor=owner, data=session_file(entries, {**HEADER, "id": pi_id})).session


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_previews_counts_and_headings_read_as_people_write(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, size: tuple[int, int]
) -> None:
    owner, mate = account("olga"), account("max")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=mate, role="editor")
    session = _session(owner)
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    discussion_services.post_comment(
        actor=owner, session=session, entry_id="a1", body="@max is the **cache** _really_ it?"
    )

    phone = size[0] < 600
    page = sign_in(open_browser(width=size[0], height=size[1]), "max")
    _open(page, f"{server_url}/sessions/{session.pk}/")
    _show_tree(page, phone)
    row = page.locator('.tree-row[data-id="u1"]')
    expect(row).to_contain_text("Why does make fail on staging?")
    expect(row).not_to_contain_text("**")
    page.locator('.tree-row[data-id="a1"]').click()
    expect(page.locator("#comments-heading")).to_have_text("Comments (1 thread)")

    page.goto(f"{server_url}/inbox/")
    line = page.locator(".inbox-item").first
    expect(line).to_contain_text("is the cache really it?")
    expect(line).not_to_contain_text("**")

    # A link holder on an entry nobody commented on sees no empty "Comments" heading.
    link = services.create_share_link(session=session, actor=owner)
    visitor = open_browser(width=size[0], height=size[1]).new_page()
    _open(visitor, f"{server_url}/s/{link.raw_token}/")
    _show_tree(visitor, phone)
    visitor.locator('.tree-row[data-id="u1"]').click()
    expect(visitor.locator("#comments")).to_be_hidden()


def test_a_single_day_of_usage_is_charted_around_that_day(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("uma")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.25}}
    stamp = f"{today}T10:00:00.000Z"
    answer = assistant_message("a1", "u1", "done", model="alpha", usage=usage)
    answer["timestamp"] = stamp
    entries = [user_message("u1", None, "go", stamp), answer]
    services.import_jsonl(actor=owner, data=session_file(entries, {**HEADER, "id": "one-day"}))

    page = sign_in(open_browser(), "uma")
    page.goto(f"{server_url}/usage/")
    chart = page.locator("#usage-chart")
    expect(chart.locator("canvas")).to_be_visible()
    expect(chart).to_have_attribute("data-points", "1")
    expect(chart).to_have_attribute("data-axis", re.compile(r"^\d{4}-\d\d-\d\d\.\."))
    first, last = chart.get_attribute("data-axis").split("..")
    span = datetime.fromisoformat(last) - datetime.fromisoformat(first)
    assert span.days == 2 and first < today < last, (first, last)
    legend = chart.locator(".u-legend")
    expect(legend).to_contain_text("Day")
    expect(legend).not_to_contain_text("--")
    expect(page.locator("#usage-totals")).to_contain_text("in 1 session")
    expect(page.locator("#usage-totals")).not_to_contain_text("1 sessions")


def test_entries_and_findings_are_named_as_people_read_them_not_by_ids(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    from tests.governance.test_secrets import leaky_entries

    owner = account("olga")
    session = services.import_jsonl(
        actor=owner, data=session_file(leaky_entries(), {**HEADER, "id": "ids"}), filename="ids.jsonl"
    ).session
    page = sign_in(open_browser(), "olga")
    _open(page, f"{server_url}/sessions/{session.pk}/")
    page.locator('.tree-row[data-id="u1"]').click()
    info = page.locator("#selected-info")
    expect(info).to_have_text("User: “show me the deploy config”")
    page.click('#node-actions button[data-action="compare"]')
    expect(page.locator("#operation-text")).to_contain_text(
        "Marked User: “show me the deploy config” for comparison"
    )
    expect(page.locator("#operation-text")).not_to_contain_text("u1 ")

    page.click("#secrets-button")
    items = page.locator("#secrets-list li")
    expect(items.filter(has_text="github-token")).to_contain_text("in the message text")
    expect(page.locator("#secrets-list")).not_to_contain_text("/message/")


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_a_short_linear_session_shows_every_entry_in_the_tree(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, axe: Any, size: tuple[int, int]
) -> None:
    owner = account("olga")
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(12):
        make = user_message if i % 2 == 0 else assistant_message
        entries.append(make(f"m{i}", parent, f"message {i}"))
        parent = f"m{i}"
    session = services.import_jsonl(actor=owner, data=session_file(entries, {**HEADER, "id": "lin"})).session
    page = sign_in(open_browser(width=size[0], height=size[1]), "olga")
    _open(page, f"{server_url}/sessions/{session.pk}/")
    _show_tree(page, size[0] < 600)
    expect(page.locator(".tree-row.run")).to_have_count(0)
    for i in range(12):
        expect(page.locator(f'.tree-row[data-id="m{i}"]')).to_have_count(1)
    assert [v for v in axe(page) if v["id"] == "label-content-name-mismatch"] == []


def test_a_link_visitor_is_drawn_with_the_pages_own_icon(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("olga")
    session = _session(owner, "visit")
    link = services.create_share_link(session=session, actor=owner)
    page = sign_in(open_browser(), "olga")
    _open(page, f"{server_url}/sessions/{session.pk}/")
    visitor = open_browser().new_page()
    _open(visitor, f"{server_url}/s/{link.raw_token}/")
    avatar = page.locator("#presence .avatar.visitor")
    expect(avatar).to_have_count(1)
    expect(avatar.locator("svg.icon-link")).to_have_count(1)
    assert "🔗" not in avatar.inner_text()


def test_people_on_a_session_get_colours_apart(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner, mate, third = account("olga"), account("max"), account("ines")
    team = Team.objects.create(name="crew")
    for person in (owner, mate, third):
        TeamMembership.objects.create(team=team, user=person, role="owner" if person is owner else "editor")
    session = _session(owner, "colours")
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    pages = [sign_in(open_browser(), name) for name in ("olga", "max", "ines")]
    for page in pages:
        _open(page, f"{server_url}/sessions/{session.pk}/")
    avatars = pages[0].locator("#presence > .avatar")
    expect(avatars).to_have_count(3)
    hues = avatars.evaluate_all("els => els.map(e => Number(e.style.getPropertyValue('--avatar-hue')))")
    gaps = [min(abs(a - b), 360 - abs(a - b)) for i, a in enumerate(hues) for b in hues[i + 1 :]]
    assert min(gaps) >= 30, hues


def test_on_a_phone_every_header_control_and_node_action_is_on_screen(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("olga", is_staff=True)
    session = _session(owner, "phone")
    page = sign_in(open_browser(width=390, height=844, is_mobile=True, has_touch=True), "olga")
    for url in (f"{server_url}/", f"{server_url}/sessions/{session.pk}/", f"{server_url}/teams/"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        shown = ".topbar a:visible, .topbar button:visible"
        controls = page.locator(f"{shown}, #node-actions button:visible, .session-bar button:visible")
        assert controls.count() >= 5
        boxes = controls.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [e.textContent.trim(), r.left, r.right]; })"
        )
        off = [(text, left, right) for text, left, right in boxes if left < 0 or right > 390]
        assert off == [], (url, off)
        overflow = page.evaluate(
            "document.scrollingElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, url
    screenshot(page, "phone-header")
