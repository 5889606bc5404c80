"""The session list's filter bar in a real browser: picked filters go to the address (and only they),
the address gives the same list again, and a chip takes its filter away."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from tests.factories import HEADER, session_file, tool_turn, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _session(owner: Any, pi_id: str, name: str, tool: str) -> None:
    entries = [user_message("u1", None, f"please {name}"), *tool_turn("c1", "u1", tool, {"path": "a.txt"})]
    data = session_file(entries, {**HEADER, "id": pi_id})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session
    services.rename_session(session=session, name=name, actor=owner)


def _names(page: Any) -> Any:
    return page.locator("table.sessions tbody .session-link")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_filter_by_tool_share_the_address_and_remove_the_chip(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any, size: str
) -> None:
    owner = account("fern")
    _session(owner, "reader", "read the notes", "read")
    _session(owner, "writer", "write the notes", "write")
    width, height = (1280, 800) if size == "desktop" else (390, 844)
    page = sign_in(open_browser(width, height), "fern")
    page.goto(f"{server_url}/")
    expect(_names(page)).to_have_count(2)
    page.locator("#filter-bar summary").click()
    page.select_option("#filter-bar select[name=tool]", "write")
    page.locator("form.filters button[type=submit]").click()
    expect(_names(page)).to_have_text(["write the notes"])
    # The address holds the filter and nothing left empty, so it can be shared as it is.
    assert "tool=write" in page.url and "owner=" not in page.url and "state=" not in page.url
    expect(page.locator("#active-filters .chip")).to_have_text(["Tool used: write ×"])
    screenshot(page, f"filters-{size}")

    again = sign_in(open_browser(width, height), "fern")
    again.goto(page.url)
    expect(_names(again)).to_have_text(["write the notes"])
    expect(again.locator("#filter-bar select[name=tool]")).to_have_value("write")

    page.locator("#active-filters .chip").click()
    expect(_names(page)).to_have_count(2)
    expect(page.locator("#active-filters")).to_have_count(0)
    assert "tool=" not in page.url
