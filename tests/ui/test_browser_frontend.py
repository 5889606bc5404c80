"""Rough edges a new user hit in Chromium, each checked as that user sees it: links, the link holder's
page, imports, search, the continue dialog, retried attempts, the branch panel, the phone layout, tool
calls, the usage tables and compaction."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import assistant_message as assistant_msg
from tests.factories import session_file, small_tree
from tests.factories import user_message as user_msg

from .helpers_rich import rich_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def store(owner: Any, entries: list[dict[str, Any]]) -> ChatSession:
    return services.import_jsonl(actor=owner, data=session_file(entries), filename="s.jsonl").session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def row(page: Any, entry_id: str) -> Any:
    return page.locator(f'.tree-row[data-id="{entry_id}"]')


def test_file_names_read_as_code_and_only_real_addresses_are_links(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    text = (
        "I changed images.py, feeds.py and src/sitemaps.py; see https://example.com/docs and www.example.org."
    )
    session = store(account("lin"), [user_msg("u1", None, "fix it"), assistant_msg("a1", "u1", text)])
    page = sign_in(open_browser(), "lin")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    card = page.locator('#branch .branch-item[data-id="a1"]')
    expect(card.locator("code", has_text="images.py")).to_have_count(1)
    expect(card.locator("code", has_text="src/sitemaps.py")).to_have_count(1)
    hrefs = card.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://example.com/docs", "http://www.example.org"]


def test_a_frozen_one_path_link_is_not_live_and_tells_its_holder_what_they_can_do(
    account: Any, open_browser: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("olga")
    session = store(owner, small_tree())
    link = services.create_share_link(session=session, actor=owner, scope="path", frozen=True)
    page = open_browser().new_page()
    open_session(page, f"{server_url}/s/{link.raw_token}/")
    status = page.locator("#live-status")
    expect(status).to_have_attribute("data-state", "frozen")
    expect(status).to_have_text("frozen")
    assert "later changes" in (status.get_attribute("title") or "").lower()
    expect(page.locator("#composer-off")).to_contain_text("ask its owner to share it with you")
    body = page.inner_text("body")
    assert "from your own list" not in body and "from your list" not in body
    screenshot(page, "frontend-frozen-link")


def test_files_import_one_after_another_and_an_empty_one_fails_plainly(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path, screenshot: Any
) -> None:
    account("ida")
    good = tmp_path / "work.jsonl"
    good.write_bytes(session_file(small_tree()))
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    page = sign_in(open_browser(), "ida")
    page.goto(f"{server_url}/import/")
    page.wait_for_selector("body[data-ready=true]")  # the page's module has attached its handlers
    page.set_input_files("#file-input", [str(good), str(empty)])
    items = page.locator(".import-item")
    expect(items).to_have_count(2)
    done = page.locator('.import-item[data-file="work.jsonl"]')
    failed = page.locator('.import-item[data-file="empty.jsonl"]')
    expect(done).to_have_attribute("data-state", "done")
    expect(done.locator(".open-imported")).to_be_visible()
    expect(failed).to_have_attribute("data-state", "failed")
    expect(failed.locator(".progress-phase")).to_have_text("Failed")
    expect(failed.locator("[role=alert]")).to_contain_text("empty")
    expect(failed.locator("progress")).to_be_hidden()  # no full bar beside "Failed"
    screenshot(page, "frontend-import-two-files")


def test_search_never_shows_a_stale_answer_counts_before_the_first_step_and_marks_the_words(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("sam"), small_tree())
    page = sign_in(open_browser(), "sam")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    box = page.locator("#tree-search")
    hits = page.locator("#search-hits")
    box.fill("zzzz")
    expect(hits).to_have_text("no match")
    box.fill("question")
    # Until the new query is answered, the old "no match" is not left on screen.
    expect(hits).not_to_have_text("no match")
    expect(hits).to_have_text("2 matches")
    marks = page.locator(".tree-row.hit mark")
    expect(marks).to_have_count(2)
    assert {m.lower() for m in marks.all_inner_texts()} == {"question"}
    box.press("Enter")
    expect(hits).to_have_text("1 of 2")


def test_enter_on_a_row_opens_continue_with_its_button_focused_and_summary_fields_off_until_asked(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("eve"), small_tree())
    page = sign_in(open_browser(), "eve")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    row(page, "a2").click()
    page.locator("#tree-scroll").press("Enter")
    dialog = page.locator("#navigate-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("button[type=submit]")).to_be_focused()
    instructions = dialog.locator("textarea[name=instructions]")
    replace = dialog.locator("input[name=replace]")
    expect(instructions).to_be_disabled()
    expect(replace).to_be_disabled()
    dialog.locator("input[name=summarize]").check()
    expect(instructions).to_be_enabled()
    expect(replace).to_be_enabled()
    dialog.locator("input[name=summarize]").uncheck()
    expect(instructions).to_be_disabled()


def test_a_retried_attempt_is_explained_not_shown_as_a_raw_id(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    entries = [
        user_msg("u1", None, "summarize the logs"),
        assistant_msg("a1", "u1", "", stop="error", errorMessage="prompt is too long"),
        {
            "type": "context_edit",
            "id": "ce1",
            "parentId": "a1",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "targetId": "a1",
            "replacement": None,
        },
        assistant_msg("a2", "ce1", "Here is the summary."),
    ]
    session = store(account("rey"), entries)
    page = sign_in(open_browser(), "rey")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    edit = row(page, "ce1")
    expect(edit).to_contain_text("Retried")
    expect(edit).to_contain_text("prompt is too long")
    expect(edit).not_to_contain_text("omit a1")
    assert "context" in (edit.get_attribute("title") or "")
    badge = row(page, "a1").locator(".badge.omitted")
    expect(badge).to_have_attribute("title", re.compile("out of the model's context"))


def test_a_new_branch_summary_is_drawn_whole_at_the_bottom_of_the_branch_panel(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("bea"), small_tree(rich=True))
    page = sign_in(open_browser(), "bea")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    row(page, "a2").click()
    expect(page.locator("#selected-info")).to_have_attribute("title", "a2")
    page.locator('#node-actions button[data-action="navigate"]').click()
    expect(page.locator("#navigate-dialog")).to_be_visible()
    page.locator("#navigate-dialog input[name=summarize]").check()
    page.locator("#navigate-dialog button[type=submit]").click()
    card = page.locator("#branch .msg-summary").last
    expect(card).to_be_visible()
    page.wait_for_timeout(500)
    screenshot(page, "frontend-branch-summary")
    page.wait_for_function(
        """() => {
            const panel = document.getElementById('branch');
            const box = panel.getBoundingClientRect();
            const cards = document.querySelectorAll('#branch .msg-summary');
            const card = cards[cards.length - 1].getBoundingClientRect();
            const atEnd = panel.scrollTop + panel.clientHeight >= panel.scrollHeight - 1;
            return atEnd && card.bottom <= box.bottom + 1;
        }"""
    )
    screenshot(page, "frontend-branch-summary")


def test_on_a_phone_most_of_the_screen_is_for_reading_and_the_title_is_whole(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("pia")
    session = store(owner, small_tree(rich=True))
    ChatSession.objects.filter(pk=session.pk).update(name="Ordering fix for the feeds page and its sitemaps")
    page = sign_in(open_browser(width=390, height=844), "pia")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    reading = page.locator("#branch").bounding_box()
    assert reading is not None
    assert reading["height"] >= 0.5 * 844, f"the branch is {reading['height']:.0f}px of 844"
    title = page.locator("#session-title")
    assert title.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "frontend-phone")


def test_an_edit_tool_call_names_its_file_once(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("ted"), rich_session())
    page = sign_in(open_browser(), "ted")
    open_session(page, f"{server_url}/sessions/{session.pk}/#entry=a1")
    page.wait_for_selector('#branch .branch-item[data-id="a1"] .tool-edit')
    call = page.locator('#branch .branch-item[data-id="a1"] .tool-edit')
    assert call.inner_text().count("app/views.py") == 1
    expect(call.locator(".diff")).to_be_visible()


def test_compact_on_a_small_session_says_why_before_the_click(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("cal"), small_tree())
    page = sign_in(open_browser(), "cal")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.locator('#node-actions button[data-action="compact"]').click()
    note = page.locator("#compact-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Nothing to compact yet")
    expect(note).to_contain_text("20,000 tokens")


def test_usage_tables_fit_at_1400_pixels_and_group_their_digits(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("root", is_staff=True, is_superuser=True)
    usage = {"input": 1234567, "output": 45678, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1280245}
    store(owner, [user_msg("u1", None, "go"), assistant_msg("a1", "u1", "done", usage=usage)])
    page = sign_in(open_browser(width=1400, height=850), "root")
    for path in (
        "/admin/audit/usagerollup/",
        "/admin/actionlog/actionlog/",
        "/admin/audit/omittedattempt/",
    ):
        page.goto(f"{server_url}{path}")
        page.wait_for_load_state("load")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400, path
    page.goto(f"{server_url}/admin/audit/usagerollup/")
    table = page.locator("table[data-table=per-model]")
    expect(table).to_contain_text("1,234,567")
    expect(table).to_contain_text("45,678")
    screenshot(page, "frontend-usage-1400")


def test_question_mark_lists_the_shortcuts_and_a_message_can_be_copied_whole(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    text = "Line one of the answer.\n\nLine two, with `code`."
    session = store(account("kim"), [user_msg("u1", None, "go"), assistant_msg("a1", "u1", text)])
    context = open_browser()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = sign_in(context, "kim")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.locator("#tree-scroll").focus()
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Search the tree")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    copy = page.locator('#branch .branch-item[data-id="a1"] .copy-message')
    copy.click()
    expect(copy).to_have_text("Copied ✓")
    assert page.evaluate("navigator.clipboard.readText()") == text
