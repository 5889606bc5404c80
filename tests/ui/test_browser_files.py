"""The files view in Chromium: the branch's files with +/−, one file's diff linking to the entry that
made it, following the selection to another branch; on a phone, its own tab; two branches compared by
their files."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from tests.factories import FILES_HEADER, session_file, tool_turn, two_branches_with_files

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_the_files_of_the_selected_branch_and_their_diffs(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("filer")
    data = session_file(two_branches_with_files(), FILES_HEADER)
    session = services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session
    context = open_browser()
    page = sign_in(context, "filer")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")

    page.click("#files-toggle")
    expect(page.locator("#context-heading")).to_have_text("Files")
    rows = page.locator("#files-list li")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("src/a.py")
    expect(rows.nth(0)).to_contain_text("created")
    expect(rows.nth(1)).to_contain_text("shared.txt")
    expect(rows.nth(1)).to_contain_text("+4")
    expect(rows.nth(1)).to_contain_text("−1")
    expect(page.locator("#files-commands")).to_contain_text("make test")
    expect(page.locator("#context")).to_be_hidden()
    screenshot(page, "files-list")

    rows.nth(1).locator("button").click()
    detail = page.locator("#file-detail")
    expect(detail.locator("h3")).to_have_text("shared.txt")
    first = detail.locator(".file-change").first
    expect(first.locator(".del")).to_have_text(["-two"])
    expect(first.locator(".ins")).to_have_text(["+2", "+3"])
    expect(detail.locator(".file-change")).to_have_count(2)  # the edit, then the write that created it
    detail.locator("summary").click()
    expect(detail.locator(".file-content pre")).to_have_text("one\n2\n3\n")
    screenshot(page, "files-diff")

    # The diff's link selects the entry that made it.
    first.locator("a.entry-link").click()
    expect(page.locator('.tree-row[data-id="c1-r"]')).to_have_class(re.compile(r"\bselected\b"))
    assert page.evaluate("location.hash") == "#entry=c1-r"
    # The view follows the selection: on the other branch, shared.txt was only created.
    page.locator('.tree-row[data-id="c9-r"]').click()
    expect(detail.locator(".file-change")).to_have_count(1)
    expect(detail.locator(".file-change .change-head")).to_contain_text("created")
    detail.locator("button", has_text="All files").click()
    expect(rows.nth(0)).to_contain_text("other.txt")
    expect(rows).to_have_count(2)
    page.locator("#files-toggle").click()  # back to the context
    expect(page.locator("#context")).to_be_visible()
    expect(page.locator("#files-view")).to_be_hidden()

    # The tree marks the results that changed a file, and its filter keeps only those (every branch).
    expect(page.locator('.tree-row[data-id="c1-r"] .badge.changed')).to_be_visible()
    expect(page.locator('.tree-row[data-id="c2-r"] .badge.changed')).to_have_count(0)  # the failed edit
    page.select_option("#tree-filter", "changed-files")
    shown = page.locator(".tree-row")
    expect(shown).to_have_count(4)
    assert sorted(shown.evaluate_all("rows => rows.map(r => r.dataset.id)")) == [
        "c0-r",
        "c1-r",
        "c4-r",
        "c9-r",
    ]
    screenshot(page, "files-tree-filter")


def test_on_a_phone_the_files_have_their_own_tab(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("phone-filer")
    data = session_file(two_branches_with_files(), FILES_HEADER)
    session = services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session
    context = open_browser(width=390, height=800)
    page = sign_in(context, "phone-filer")
    page.goto(f"{server_url}/sessions/{session.pk}/#entry=c9-r")
    page.wait_for_selector("body[data-ready=true]")
    page.click(".panel-tabs button[data-panel=files]")
    rows = page.locator("#files-list li")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("other.txt")
    expect(page.locator("#branch")).to_be_hidden()
    screenshot(page, "files-phone")
    rows.nth(0).locator("button").click()
    page.locator("#file-detail a.entry-link").first.click()
    expect(page.locator("#branch")).to_be_visible()  # the entry that wrote it, in its branch
    assert page.evaluate("location.hash") == "#entry=c9-r"


def test_two_branches_compared_by_their_files(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("file-comparer")
    entries = [
        *two_branches_with_files(),
        *tool_turn("c10", "c9-r", "edit", {"path": "shared.txt", "oldText": "two", "newText": "deux"}),
    ]
    session = services.import_jsonl(
        actor=owner, data=session_file(entries, FILES_HEADER), filename="f.jsonl"
    ).session
    page = sign_in(open_browser(), "file-comparer")
    # From the session page, as a user compares: mark one node, then compare the other with it.
    page.goto(f"{server_url}/sessions/{session.pk}/#entry=c10-r")
    page.wait_for_selector("body[data-ready=true]")
    page.click("#node-actions button[data-action=compare]")
    page.locator('.tree-row[data-id="c4-r"]').click()
    page.click("#node-actions button[data-action=compare]")
    page.wait_for_url("**/compare/**")
    page.wait_for_selector("body[data-ready=true]")
    config = page.evaluate("JSON.parse(document.getElementById('compare-config').textContent)")
    a, b = config["a"], config["b"]
    assert {a, b} == {"c4-r", "c10-r"}
    left, right = ("src/a.py", "other.txt") if a == "c4-r" else ("other.txt", "src/a.py")

    expect(page.locator("#files-view")).to_be_hidden()
    page.click("#tab-files")
    expect(page.locator("#tab-files")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#context-view")).to_be_hidden()
    page.wait_for_selector("#files-view[data-ready=true]")
    expect(page.locator("#files-only-a-count")).to_have_text("1 only on A")
    expect(page.locator("#files-only-b-count")).to_have_text("1 only on B")
    expect(page.locator("#files-both-count")).to_have_text("1 on both")
    expect(page.locator("#files-only-a .cmp-file")).to_have_text(re.compile(re.escape(left)))
    expect(page.locator("#files-only-b .cmp-file")).to_have_text(re.compile(re.escape(right)))

    both = page.locator("#files-both .cmp-file")
    expect(both).to_have_count(1)
    expect(both.locator("h3")).to_have_text("shared.txt")
    sides = {"c4-r": (["+2", "+3"], "c1-r"), "c10-r": (["+deux"], "c10-r")}
    for label, leaf in (("A", a), ("B", b)):
        column = both.locator(f'[data-side="{label}"]')
        expect(column.locator(".del")).to_have_text(["-two"])
        expect(column.locator(".ins")).to_have_text(sides[leaf][0])
        expect(column.locator(".file-change")).to_have_attribute("data-entry", sides[leaf][1])
    # How the two versions differ, from A's text to B's.
    both.locator("details.versions summary").click()
    expect(both.locator("details.versions .diff")).to_be_visible()
    box = both.locator('[data-side="A"]').bounding_box()
    other = both.locator('[data-side="B"]').bounding_box()
    assert box is not None and other is not None and other["x"] > box["x"] + box["width"] - 1  # side by side
    screenshot(page, "compare-files")

    # A file only on one side opens to its diff; its entry link leads to the node in the session.
    page.locator("#files-only-b .cmp-file summary").click()
    expect(page.locator("#files-only-b .cmp-file .diff")).to_be_visible()
    # The tab is kept in the address: a reload opens the files again.
    assert page.evaluate("location.hash") == "#files"
    page.reload()
    page.wait_for_selector("#files-view[data-ready=true]")
    expect(page.locator("#files-both .cmp-file")).to_have_count(1)


def test_search_by_path_lists_the_session_and_opens_the_entry_that_touched_it(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("finder")
    data = session_file(two_branches_with_files(), FILES_HEADER)
    session = services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session
    page = sign_in(open_browser(), "finder")
    page.goto(f"{server_url}/")
    expect(page.locator("input[name=q]")).to_have_attribute("placeholder", re.compile("path:"))

    def search(words: str) -> None:
        page.fill("input[name=q]", words)
        with page.expect_navigation():
            page.click("button:text('Search')")

    search("path:*.txt tool:edit")
    expect(page.locator("a.session-link")).to_have_count(1)
    hits = page.locator(f'tr[data-session-id="{session.pk}"] a.search-hit')
    expect(hits).to_have_count(1)  # the edit of shared.txt; the failed one is no touch
    expect(hits.first).to_have_text("edit shared.txt")
    screenshot(page, "search-by-path")
    hits.first.click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator('.tree-row[data-id="c1-r"]')).to_have_class(re.compile(r"\bselected\b"))
    # The session page's search is active: it steps through the session's matching tool results.
    expect(page.locator("#tree-search")).to_have_value("path:*.txt tool:edit")
    expect(page.locator("#search-hits")).to_have_text("1 of 1")
    page.fill("#tree-search", "path:*.txt")
    expect(page.locator("#search-hits")).to_have_text("3 matches")
    page.press("#tree-search", "Enter")
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-id", re.compile(r"^c[019]-r$"))

    page.goto(f"{server_url}/")
    search("path:nowhere/")
    expect(page.locator("a.session-link")).to_have_count(0)
    search("-path:src/")
    expect(page.locator("#search-error")).to_contain_text("cannot exclude")
