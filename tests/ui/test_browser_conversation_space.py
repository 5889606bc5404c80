"""In Chromium, the session page gives the conversation the branch column: the selected message's
actions sit beside it, its comments fold into one small control, and the composer is one line until
used, so a laptop and a phone both show a screenful of messages."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from discussion.services import post_comment
from providers.models import LLMProvider
from sessions_app import services
from tests.factories import session_file

from .helpers_rich import rich_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)

# What "a screenful" means at each size: the height of the scrolling list of message cards.
DESKTOP, PHONE = (1440, 900), (390, 844)
MIN_READING = {DESKTOP: 600, PHONE: 450}


def _ready_session(owner: Any) -> Any:
    data = session_file(rich_session())
    session = services.import_jsonl(actor=owner, data=data, filename="s.jsonl").session
    # A thread on the leaf and a model to send with: the page as a team member finds it on a working day.
    post_comment(actor=owner, session=session, entry_id=session.leaf_entry_id, body="Is **this** right?")
    LLMProvider.objects.create(
        name="Local", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p", reasoning=True
    )
    return session


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_branch_column_is_for_reading(
    account: Any,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
    screenshot: Any,
    axe: Any,
    size: tuple[int, int],
    scheme: str,
) -> None:
    owner = account("rhea")
    session = _ready_session(owner)
    width, height = size
    phone = size == PHONE
    extra = {"is_mobile": True, "has_touch": True} if phone else {}
    page = sign_in(open_browser(width=width, height=height, color_scheme=scheme, **extra), "rhea")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    leaf = page.locator(f'#branch .branch-item.selected[data-id="{session.leaf_entry_id}"]')
    expect(leaf).to_be_visible()
    expect(page.locator("#comments")).to_be_visible()  # the leaf's thread has been read
    expect(page.locator("#composer-model option")).to_have_count(1)
    page.wait_for_load_state("networkidle")
    screenshot(page, f"session-page-{width}-{scheme}")

    reading = page.locator("#branch").evaluate("el => el.clientHeight")
    print(f"messages area at {width}×{height} ({scheme}): {reading}px")
    assert reading >= MIN_READING[size], f"{reading}px of messages at {width}×{height} ({scheme})"
    overflow = page.evaluate("document.scrollingElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"
    panel = page.locator(".branch-panel").bounding_box()
    assert panel is not None and panel["x"] >= 0 and panel["x"] + panel["width"] <= width

    # The actions belong to the selected message: under it, in view when the page opens at the leaf, and
    # reachable by keyboard.
    actions = page.locator("#node-actions")
    expect(leaf).to_be_in_viewport()
    expect(actions).to_be_in_viewport()
    card = leaf.bounding_box()
    bar = actions.bounding_box()
    assert card is not None and bar is not None
    assert card["y"] + card["height"] - 2 <= bar["y"] <= card["y"] + card["height"] + 24, (card, bar)
    fork = page.locator("#node-actions button[data-action=fork]")
    fork.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#fork-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#fork-dialog")).to_be_hidden()

    # The thread is one small control until opened; opened, it reads and takes a comment.
    toggle = page.locator("#comments-toggle")
    expect(toggle).to_have_text("Comments (1 thread)")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#comment-text")).to_be_hidden()
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#comment-threads .thread")).to_contain_text("Is this right?")
    expect(page.locator("#comment-text")).to_be_visible()
    assert axe(page) == []
    toggle.click()
    expect(page.locator("#comment-text")).to_be_hidden()

    # The composer is one line until it is used, and grows to write in.
    text = page.locator("#composer-text")
    idle = text.evaluate("el => el.getBoundingClientRect().height")
    assert idle <= 44, f"the idle message box is {idle}px tall"
    text.focus()
    expect(text).to_be_focused()
    for _ in range(20):  # it grows with a short transition (a string predicate would need eval under the CSP)
        opened = text.evaluate("el => el.getBoundingClientRect().height")
        if opened > idle + 20:
            break
        page.wait_for_timeout(50)
    assert opened > idle + 20, f"the focused message box is {opened}px tall, {idle}px idle"
    for control in ("#composer-send", "#composer-model", "#composer-thinking"):
        expect(page.locator(control)).to_be_visible()
    expect(page.locator("label:has(#composer-file)")).to_be_visible()
    expect(page.locator("#composer-file")).to_have_accessible_name("Attach a picture")
    overflow = page.evaluate("document.scrollingElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"with the composer open the page is {overflow}px wider than the screen"
    text.blur()
    assert axe(page) == []
