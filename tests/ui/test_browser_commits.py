"""The session page's Commits part in Chromium: each commit made in the session, opening the entry whose
bash result printed it in the tree; a teammate who cannot read the session finds nothing by its SHA."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from tests.factories import HEADER, session_file, user_message
from tests.provenance.test_provenance import bash_turn, commit, git

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def test_the_commits_part_opens_the_entry_that_made_each_commit(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any, tmp_path: Path
) -> None:
    owner = account("committer")
    account("stranger")
    git(tmp_path, "init", "-q")
    out1, sha1 = commit(tmp_path, "a.txt", "First import")
    out2, sha2 = commit(tmp_path, "b.txt", "Fix the parser")
    entries = [
        user_message("u1", None, "start"),
        *bash_turn("c1", "u1", 'git commit -m "First import"', out1),
        user_message("u2", "c1-r", "fix it"),
        *bash_turn("c2", "u2", 'git commit -am "Fix the parser"', out2),
    ]
    data = session_file(entries, {**HEADER, "id": "ui-commits", "cwd": str(tmp_path)})
    session = services.import_jsonl(actor=owner, data=data, filename="c.jsonl").session

    context = open_browser()
    page = sign_in(context, "committer")
    # A pasted SHA in the list's search box finds the session.
    page.goto(f"{server_url}/")
    page.fill("input[name=q]", sha2)
    page.keyboard.press("Enter")
    expect(page.locator(f'a[href="/sessions/{session.pk}/"]').first).to_be_visible()
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    part = page.locator("#commits")
    expect(part.locator("h2")).to_have_text("Commits")
    expect(part.locator("li")).to_have_count(2)
    expect(part.locator("li").nth(1)).to_contain_text("Fix the parser")
    part.scroll_into_view_if_needed()
    screenshot(page, "commits-part")
    part.locator("a.commit-link").first.click()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator('.tree-row[data-id="c1-r"]')).to_have_class(re.compile(r"\bselected\b"))
    assert sha1.startswith(page.locator("#commits a.commit-link").first.inner_text())

    other = sign_in(open_browser(), "stranger")
    other.goto(f"{server_url}/?q={sha2}")
    expect(other.locator(f'a[href="/sessions/{session.pk}/"]')).to_have_count(0)
