"""The API tokens page: a new token's text is shown once, works as a token, and can be revoked."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_a_token_made_on_the_page_is_shown_once_and_revoked_there(
    account: Any,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
) -> None:
    account("olga")
    page = sign_in(open_browser(), "olga")
    page.get_by_role("link", name="API tokens").click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#tokens-empty")).to_be_visible()
    page.fill("#token-form input[name=name]", "laptop")
    page.get_by_role("button", name="Create token").click()
    text = page.locator("#new-token-text")
    expect(text).not_to_be_empty()
    token = text.inner_text()
    rows = page.locator("#token-rows tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("laptop")
    assert token not in rows.inner_text()  # the list names it by its first characters only

    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{server_url}/api/sessions/", headers=headers).status_code == 200

    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#new-token")).to_be_hidden()
    # The list names the token by 8 characters at most, in its text and in its markup.
    expect(rows).to_contain_text(f"{token[:8]}…")
    assert token[:9] not in page.content()
    page.get_by_role("button", name="Revoke").click()
    page.locator("dialog[open] button", has_text="Revoke").click()
    expect(page.locator("#token-rows tr")).to_have_count(0)
    assert httpx.get(f"{server_url}/api/sessions/", headers=headers).status_code in (401, 403)
