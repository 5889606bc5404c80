"""The session list's filter bar in a real browser: picked filters go into the URL, the URL alone gives
the same list again, and removing a chip widens the list."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import SessionShare
from teams import services as team_services
from tests.factories import assistant_message, session_file, tool_turn, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _session(owner: Any, pi_id: str, name: str, tool: str, model: str) -> Any:
    entries = [
        user_message("u1", None, f"about {name}"),
        assistant_message("a1", "u1", "sure", model=model),
        *tool_turn("c1", "a1", tool, {"path": "src/app.py", "command": "make"}),
    ]
    header = {
        "type": "session",
        "version": 3,
        "id": pi_id,
        "timestamp": "2026-01-02T03:04:05.678Z",
        "cwd": "/w",
    }
    session = services.import_jsonl(actor=owner, data=session_file(entries, header)).session
    session.name = name
    session.save(update_fields=["name"])
    return session


def test_the_filter_bar_keeps_filters_in_the_url(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    dee, eve = account("dee"), account("eve")
    team = team_services.create_team(actor=dee, name="crew")
    _session(dee, "one", "alpha edits", "edit", "alpha")
    _session(dee, "two", "beta runs", "bash", "beta")
    shared = _session(eve, "three", "eve edits", "edit", "alpha")
    SessionShare.objects.create(session=shared, team=team)
    _session(account("zed"), "four", "zed private", "edit", "alpha")  # never listed for dee

    page = sign_in(open_browser(), "dee")
    page.goto(f"{server_url}/")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator('[data-filter="team"] select option')).to_have_text(["any", "crew"])

    page.locator('[data-filter="tool"] input').fill("edit")
    page.select_option('[data-filter="model"] select', "p/alpha")
    page.locator("form.filters button[type=submit]").click()
    expect(rows).to_have_count(2)
    expect(page.locator("table.sessions")).to_contain_text("alpha edits")
    expect(page.locator("table.sessions")).to_contain_text("eve edits")
    query = parse_qs(urlparse(page.url).query)
    assert query.get("tool") == ["edit"] and query.get("model") == ["p/alpha"]
    assert "team" not in query  # empty fields stay out of the link
    expect(page.locator(".filter-chip")).to_have_count(2)
    screenshot(page, "session-filters")

    # The link alone, in a fresh page, gives the same list.
    again = sign_in(open_browser(), "dee")
    again.goto(page.url)
    expect(again.locator("table.sessions tbody tr")).to_have_count(2)
    expect(again.locator('[data-filter="tool"] input')).to_have_value("edit")

    # Narrow to the team, then remove the tool chip: the team's session stays, the list widens no further.
    page.select_option('[data-filter="team"] select', "crew")
    page.locator("form.filters button[type=submit]").click()
    expect(rows).to_have_count(1)
    expect(page.locator("table.sessions")).to_contain_text("eve edits")
    page.locator('.filter-chip[data-filter="model"] .remove-filter').click()
    expect(page.locator(".filter-chip")).to_have_count(2)
    assert "model" not in parse_qs(urlparse(page.url).query)
    page.locator('.filter-chip[data-filter="team"] .remove-filter').click()
    expect(rows).to_have_count(2)
    expect(page.locator("table.sessions")).not_to_contain_text("zed private")

    # A bad value says why instead of showing an empty list.
    page.goto(f"{server_url}/?state=sleeping")
    expect(page.locator("#search-error")).to_contain_text("state: unknown value 'sleeping'")
