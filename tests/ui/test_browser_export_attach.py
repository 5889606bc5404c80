"""In Chromium: downloading a branch or the whole tree as a document, from the page and from a link."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import session_file, small_tree

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


@pytest.fixture
def account(django_user_model: Any) -> Callable[..., Any]:
    def make(username: str, **extra: Any) -> Any:
        password = PBKDF2PasswordHasher().encode(PASSWORD, "browser-tests", iterations=1000)
        return django_user_model.objects.create(username=username, password=password, **extra)

    return make


def store(owner: Any, entries: list[dict[str, Any]]) -> ChatSession:
    return services.import_jsonl(actor=owner, data=session_file(entries), filename="s.jsonl").session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def download(page: Any, fmt: str, scope: str | None, folder: Path) -> tuple[str, str]:
    """Export through the dialog; return the file name the browser saved and its text."""
    page.click("#export-button")
    page.select_option('#export-dialog select[name="format"]', fmt)
    if scope is not None:
        page.check(f'#export-dialog input[name="scope"][value="{scope}"]')
    with page.expect_download() as caught:
        page.click("#export-download")
    saved = folder / caught.value.suggested_filename
    caught.value.save_as(saved)
    expect(page.locator("#export-dialog")).not_to_be_visible()
    return caught.value.suggested_filename, saved.read_text()


def test_the_branch_to_the_selected_entry_and_the_whole_tree_download_as_documents(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path
) -> None:
    session = store(account("exa"), small_tree(rich=True))
    page = sign_in(open_browser(accept_downloads=True), "exa")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.locator('.tree-row[data-id="a2"]').click()
    name, text = download(page, "markdown", "branch", tmp_path)
    assert name.endswith(".branch.md")
    assert "first question" in text and "second question" not in text

    name, page_text = download(page, "html", "tree", tmp_path)
    assert name.endswith(".tree.html")
    assert "first question" in page_text and "second question" in page_text
    # The saved page opens on its own, with nothing to fetch, and shows the messages.
    viewer = page.context.new_page()
    fetched: list[str] = []
    viewer.on("request", lambda request: fetched.append(request.url))
    viewer.goto((tmp_path / name).as_uri())
    expect(viewer.locator("article.msg-user").first).to_contain_text("hello there")
    expect(viewer.locator("article.msg-assistant strong")).to_have_text("answer")
    assert fetched == [(tmp_path / name).as_uri()]

    name, jsonl = download(page, "jsonl", None, tmp_path)
    assert name.endswith(".jsonl") and jsonl.encode() == session_file(small_tree(rich=True))


def test_a_path_link_holder_downloads_only_the_path(
    account: Any, open_browser: Any, server_url: str, tmp_path: Path
) -> None:
    owner = account("exb")
    session = store(owner, small_tree(rich=True))
    link = services.create_share_link(session=session, actor=owner, scope="path", entry_id="a2")
    page = open_browser(accept_downloads=True).new_page()
    open_session(page, f"{server_url}/s/{link.raw_token}/")
    _, text = download(page, "markdown", "tree", tmp_path)
    assert "first question" in text and "second question" not in text
