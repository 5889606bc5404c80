"""A Pi writing the session live, as the session page shows it on a desktop and on a phone."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from sessions_app.models import ApiToken, ChatSession
from tests.sync.helpers import chain, header

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def push(server_url: str, token: str, lines: list[str], start: int) -> None:
    control = {
        "header": header(),
        "from": {"lines": start, "bytes": 0, "lastId": None},
        "to": {"lines": start + len(lines), "bytes": 0},
        "device": "build-box",
    }
    body = json.dumps(control) + "\n" + "".join(line + "\n" for line in lines)
    answer = httpx.post(
        f"{server_url}/api/sync/",
        content=body.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("size", [(1400, 850), (390, 844)], ids=["desktop", "phone"])
def test_the_page_shows_pi_writing_live_where_it_is_until_it_leaves(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any, size: tuple[int, int]
) -> None:
    ada = account("ada")
    token = ApiToken.objects.create(user=ada)[1]
    lines = chain(6)
    push(server_url, token, lines[:4], 0)
    session = ChatSession.objects.get(pi_id="sync-demo")
    page = sign_in(open_browser(width=size[0], height=size[1]), "ada")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")

    badge = page.locator("#pi-live")
    expect(badge).to_have_text("live from Pi on build-box")
    expect(badge).to_be_in_viewport()
    # Pi writes on: its entries arrive, and its mark moves to the newest one it wrote.
    push(server_url, token, lines[4:], 4)
    # (On a phone the tree is a tab of its own: the rows are there, not on screen.)
    expect(page.locator('.tree-row[data-id="e5"]')).to_have_count(1)
    expect(page.locator('.tree-row[data-id="e5"] .presence-marks .avatar.pi')).to_have_count(1)
    expect(page.locator('#presence .avatar.pi[title^="live from Pi on build-box"]')).to_be_visible()
    expect(page.locator('#branch .branch-item[data-id="e5"]')).to_contain_text("line 5")
    expect(page.locator('.tree-row[data-id="e3"] .presence-marks')).to_have_count(0)
    screenshot(page, f"live-from-pi-{'phone' if size[0] < 600 else 'desktop'}")

    # Pi quits: the page says so at once.
    left = httpx.post(
        f"{server_url}/api/sync/presence/",
        json={"piId": "sync-demo", "device": "build-box", "leaving": True},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert left.status_code == 200
    expect(badge).to_have_count(0, timeout=5000)
    expect(page.locator(".presence-marks .avatar.pi")).to_have_count(0)
