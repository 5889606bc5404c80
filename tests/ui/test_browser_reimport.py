"""In Chromium: the Pi file imported again after the session grew in piweb is the same session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import HEADER, assistant_message, session_file, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _import(page: Any, server_url: str, upload: Path) -> str:
    page.goto(f"{server_url}/import/")
    page.wait_for_selector("body[data-ready=true]")
    page.set_input_files("#file-input", str(upload))
    page.wait_for_selector(".import-item[data-state=done] .open-imported, .import-item[data-state=failed]")
    return page.inner_text(".import-item .import-result")


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_the_original_file_again_imports_what_is_new_and_keeps_what_piweb_added(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path, size: tuple[int, int]
) -> None:
    ada = account("ada")
    entries = [user_message("u1", None, "first"), assistant_message("a1", "u1", "answer")]
    original = tmp_path / "work.jsonl"
    original.write_bytes(session_file(entries, {**HEADER, "id": "grows"}))
    page = sign_in(open_browser(width=size[0], height=size[1]), "ada")
    assert "Imported 2 entries" in _import(page, server_url, original)

    session = ChatSession.objects.get(owner=ada, pi_id="grows")
    services.append_entries(actor=ada, session=session, entries=[user_message("u2", "a1", "asked in piweb")])
    said = _import(page, server_url, original)
    assert "already stored; nothing new in this file" in said
    assert "piweb holds 1 entry this file does not have" in said

    # Pi went on from the same point: its new entry joins the tree beside piweb's.
    grown = tmp_path / "work-later.jsonl"
    later = [*entries, user_message("u3", "a1", "asked in Pi")]
    grown.write_bytes(session_file(later, {**HEADER, "id": "grows"}))
    said = _import(page, server_url, grown)
    assert "Appended 1 new entry" in said
    page.click(".open-imported")
    page.wait_for_selector("body[data-ready=true]")
    for entry_id in ("u2", "u3"):
        assert page.locator(f'.tree-row[data-id="{entry_id}"]').count() == 1
