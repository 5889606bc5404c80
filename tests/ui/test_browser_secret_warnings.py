"""In Chromium: secrets are named before they leave, whether by a share link or by a prompt, and show live."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from providers.models import LLMProvider
from sessions_app import services
from tests.factories import HEADER, assistant_message, session_file, user_message
from tests.governance.test_secrets import AWS_KEY, leaky_entries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_the_share_dialog_names_the_secrets_and_redacts_them_first(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, size: tuple[int, int]
) -> None:
    owner = account("olga")
    data = session_file(leaky_entries(), {**HEADER, "id": "leaky"})
    session = services.import_jsonl(actor=owner, data=data, filename="leaky.jsonl").session
    page = sign_in(open_browser(width=size[0], height=size[1]), "olga")
    _open(page, f"{server_url}/sessions/{session.pk}/")

    page.click("#sharing-button")
    warning = page.locator("#share-secrets")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("3 secrets that are not redacted")
    expect(warning).to_contain_text("aws-access-key")
    expect(warning).not_to_contain_text(AWS_KEY)
    page.click("#share-redact-first")
    expect(warning).to_be_hidden()

    page.click("#link-submit")
    address = page.locator("#new-link input").input_value()
    visitor = open_browser().new_page()
    _open(visitor, address)
    expect(visitor.locator("body")).to_contain_text("[REDACTED:aws-access-key]")
    assert AWS_KEY not in visitor.content()


def test_a_secret_appended_meanwhile_shows_on_the_owners_page_without_a_reload(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("olga")
    entries = [user_message("u1", None, "hello"), assistant_message("a1", "u1", "hi")]
    session = services.import_jsonl(
        actor=owner, data=session_file(entries, {**HEADER, "id": "clean"}), filename="clean.jsonl"
    ).session
    page = sign_in(open_browser(), "olga")
    _open(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#secrets-button")).to_be_hidden()

    # Another client (piweb-sync, a runner) appends a line holding a key.
    services.append_entries(
        actor=owner, session=session, entries=[user_message("u2", "a1", f"the key is {AWS_KEY}")]
    )
    expect(page.locator("#secrets-button")).to_have_text("1 secret…")
    expect(page.locator('.tree-row[data-id="u2"] .badge.secret')).to_be_visible()


def test_the_composer_asks_before_a_prompt_with_a_secret_leaves(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("olga")
    entries = [user_message("u1", None, "hello"), assistant_message("a1", "u1", "hi")]
    session = services.import_jsonl(
        actor=owner, data=session_file(entries, {**HEADER, "id": "s"}), filename="s.jsonl"
    ).session
    LLMProvider.objects.create(name="Local", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p")
    page = sign_in(open_browser(), "olga")
    sent: list[dict[str, Any]] = []

    def fake_run(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        sent.append(json.loads(route.request.post_data))
        route.fulfill(status=202, content_type="application/json", body='{"runId": "r"}')

    page.route("**/api/sessions/*/runs/", fake_run)
    _open(page, f"{server_url}/sessions/{session.pk}/")
    page.fill("#composer-text", f"deploy with {AWS_KEY} please")
    page.keyboard.press("Enter")
    dialog = page.locator("#confirm-action-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("This prompt holds a secret")
    expect(dialog).to_contain_text("aws-access-key")
    dialog.locator("[data-cancel]").click()
    expect(dialog).to_be_hidden()
    assert sent == []
    assert page.input_value("#composer-text") == f"deploy with {AWS_KEY} please"

    # A prompt without one goes at once; one with a secret goes only when the person says so.
    page.fill("#composer-text", "deploy please")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-text")).to_have_value("")
    assert [body["prompt"] for body in sent] == ["deploy please"]
