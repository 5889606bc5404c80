"""In Chromium: a session without a name is called by its first prompt everywhere, and a rename shows live."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from teams.models import Team, TeamMembership
from tests.factories import HEADER, assistant_message, session_file, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)

PROMPT = "Why does the deploy script   fail on\\nthe staging host when the cache is cold?"
TITLE = "Why does the deploy script fail on the staging host when the cache is cold?"


def _open_admin(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state()


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["desktop", "phone"])
def test_an_unnamed_session_is_titled_by_its_first_prompt(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, size: tuple[int, int]
) -> None:
    owner = account("olga")
    header = {**HEADER, "id": "0f4c2a9e-5b7d-4e21-9c3a-7d8e6f5a4b3c"}
    entries = [
        user_message("u1", None, PROMPT.replace("\\n", "\n")),
        assistant_message("a1", "u1", "Let me look."),
    ]
    session = services.import_jsonl(
        actor=owner, data=session_file(entries, header), filename="s.jsonl"
    ).session
    assert session.name == ""

    page = sign_in(open_browser(width=size[0], height=size[1]), "olga")
    _open(page, f"{server_url}/")
    link = page.locator(f'tr[data-session-id="{session.pk}"] .session-link')
    expect(link).to_have_text(TITLE)
    _open(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#session-title")).to_have_text(TITLE)
    assert page.title() == f"{TITLE} · piweb"
    page.click("#sharing-button")
    expect(page.locator("#share-title")).to_contain_text(TITLE)
    for place in (page.content(),):
        assert header["id"] not in place.split("session-config")[0]  # not shown in the page's text
    account("root", is_staff=True, is_superuser=True)
    admin_page = sign_in(open_browser(), "root")
    _open_admin(admin_page, f"{server_url}/admin/actionlog/actionlog/")
    expect(admin_page.locator("#result_list")).to_contain_text(TITLE)


def test_a_rename_reaches_a_teammates_open_page(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner, mate = account("olga"), account("max")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=mate, role="editor")
    entries = [user_message("u1", None, "hello"), assistant_message("a1", "u1", "hi")]
    session = services.import_jsonl(
        actor=owner, data=session_file(entries, {**HEADER, "id": "r"}), filename="r.jsonl"
    ).session
    services.share_with_team(session=session, team=team, access="editor", actor=owner)

    watcher = sign_in(open_browser(), "max")
    _open(watcher, f"{server_url}/sessions/{session.pk}/")
    expect(watcher.locator("#session-title")).to_have_text("hello")
    services.rename_session(session=session, name="Cold cache investigation", actor=owner)
    expect(watcher.locator("#session-title")).to_have_text("Cold cache investigation")
    expect(watcher).to_have_title("Cold cache investigation · piweb")
