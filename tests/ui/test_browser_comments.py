"""Two people discuss a node in two browsers: each sees the other's presence (in the header, at the node
they selected), a comment, a mention that reaches the other's inbox and their mailbox (a real SMTP server
on loopback), a reply and a resolve, each seen live on the other side.

The server is a daphne of its own, started with the SMTP server's address in its environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from discussion.models import Comment
from sessions_app import services
from teams.models import Team, TeamMembership
from tests.discussion.smtp import Inbox, smtp_server
from tests.factories import session_file, small_tree
from tests.procs import free_port, wait_for_port

from .conftest import REPO, database_url, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)
TIMINGS = REPO / "test-artifacts" / "comments-timings.txt"


@pytest.fixture(scope="module")
def mail_server(django_db_setup: Any) -> Iterator[tuple[str, Inbox]]:
    """Serve piweb with daphne on a free port, sending its email to an SMTP server on loopback."""
    with smtp_server() as (smtp_port, received):
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "DJANGO_DEBUG": "1",
            "PIWEB_CELERY_EAGER": "1",  # the emails are sent inside the request's after-commit work
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(smtp_port),
            "PIWEB_BASE_URL": f"http://127.0.0.1:{port}",
            "PYTHONUNBUFFERED": "1",
        }
        log = tempfile.NamedTemporaryFile(prefix="piweb-daphne-", suffix=".log", delete=False)  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port, process, log.name)
            yield f"http://127.0.0.1:{port}", received
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            # Its connections end with the process; the suite's own server and this process keep theirs.
            log.close()


@pytest.fixture
def account(account: Callable[..., Any]) -> Callable[[str], Any]:
    """The suite's accounts, each with an email address, so a mention reaches a mailbox."""
    return lambda username: account(username, email=f"{username}@example.test")


def waited(start: float) -> float:
    return round((time.monotonic() - start) * 1000)


def test_two_people_discuss_a_node_live(
    account: Any, open_browser: Any, mail_server: tuple[str, Inbox], screenshot: Any
) -> None:
    base, mailbox = mail_server
    olga, eddie = account("olga"), account("eddie")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=olga, role="owner")
    TeamMembership.objects.create(team=team, user=eddie, role="editor")
    session = services.import_jsonl(
        actor=olga, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session
    services.share_with_team(session=session, team=team, access="editor", actor=olga)
    timings: dict[str, float] = {}

    pages = {}
    for name in ("olga", "eddie"):
        page = signed_in(open_browser(), base, name)
        page.goto(f"{base}/sessions/{session.pk}/#entry=a2")
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#comments")).to_be_visible()
        expect(page.locator("#live-status")).to_have_attribute("data-state", "live")
        pages[name] = page
    a, b = pages["olga"], pages["eddie"]
    start = time.monotonic()  # from the moment Eddie's page is live
    expect(b.locator("#inbox-count")).to_be_hidden()

    # The same two browsers see each other: in the header's roster, and at the node each has selected.
    expect(a.locator('#presence [data-person="eddie"]')).to_be_visible()
    expect(b.locator('#presence [data-person="olga"]')).to_be_visible()
    timings["presence: each in the other's header"] = waited(start)
    expect(a.locator('.tree-row[data-id="a2"] .presence-marks [data-person="eddie"]')).to_be_visible()
    expect(b.locator('.tree-row[data-id="a2"] .presence-marks [data-person="olga"]')).to_be_visible()
    timings["presence: each at the other's node"] = waited(start)
    start = time.monotonic()
    b.locator('.tree-row[data-id="u2"]').click()
    expect(a.locator('.tree-row[data-id="u2"] .presence-marks [data-person="eddie"]')).to_be_visible()
    expect(a.locator('.tree-row[data-id="a2"] .presence-marks [data-person="eddie"]')).to_have_count(0)
    timings["presence: a move to another node seen by the other browser"] = waited(start)
    b.locator('.tree-row[data-id="a2"]').click()
    expect(a.locator('.tree-row[data-id="a2"] .presence-marks [data-person="eddie"]')).to_be_visible()
    # Neither browser marks its own place.
    expect(a.locator('.presence-marks [data-person="olga"]')).to_have_count(0)
    expect(b.locator('.presence-marks [data-person="eddie"]')).to_have_count(0)
    screenshot(a, "comments-two-browsers-presence")

    # Olga opens the entry's comments (folded under its card) and writes one mentioning Eddie, picking him
    # from the autocomplete.
    a.click("#comments-toggle")
    a.fill("#comment-text", "Why did it answer **this**? @ed")
    a.locator("#comment-text").press("End")
    a.locator("#comment-text").type("d")
    a.locator("#comment-text").press("Backspace")  # typing again re-opens the list with the same prefix
    expect(a.locator('#mention-list li[data-username="eddie"]')).to_be_visible()
    a.locator("#comment-text").press("Tab")
    expect(a.locator("#comment-text")).to_have_value("Why did it answer **this**? @eddie ")
    start = time.monotonic()
    a.click("#comment-send")
    expect(a.locator("#comment-threads .thread")).to_have_count(1)
    timings["comment shown to its author"] = waited(start)
    expect(b.locator("#comment-threads .thread .comment-body strong")).to_have_text("this")
    timings["comment shown live to the other browser"] = waited(start)
    badge = b.locator('.tree-row[data-id="a2"] .badge.comments.open')
    expect(badge).to_have_text("1")
    # The page's own icon, not an emoji that shows as an empty box without an emoji font.
    expect(badge.locator("svg.icon-comment")).to_have_count(1)
    timings["tree badge on the other browser"] = waited(start)
    expect(b.locator("#inbox-count")).to_have_text("1")
    timings["inbox count in the other browser's header"] = waited(start)
    messages = mailbox.wait(1, timeout=15)
    timings["email at the SMTP server"] = waited(start)
    [(recipients, message)] = messages
    assert recipients == ["eddie@example.test"]
    assert "olga mentioned you" in message["Subject"]
    assert f"/sessions/{session.pk}/#entry=a2" in message.get_payload(decode=True).decode()

    # Eddie finds it in his inbox, answers in the thread, and resolves it.
    inbox = b.context.new_page()
    inbox.goto(f"{base}/inbox/")
    expect(inbox.locator(".inbox-item.unread")).to_have_count(1)
    expect(inbox.locator(".inbox-item")).to_contain_text("olga mentioned you")
    inbox.close()
    b.click("#comments-toggle")
    b.locator("#comment-threads .thread button", has_text="Reply").click()
    b.fill("#comment-threads .reply-form textarea", "It followed the second question.")
    start = time.monotonic()
    b.locator("#comment-threads .reply-form button[type=submit]").click()
    expect(a.locator("#comment-threads .thread .comment")).to_have_count(2)
    timings["reply shown live to the thread's author"] = waited(start)
    start = time.monotonic()
    b.locator("#comment-threads .thread button", has_text="Resolve").click()
    expect(a.locator("#comment-threads .thread.resolved")).to_contain_text("Resolved by eddie")
    timings["resolve shown live to the other browser"] = waited(start)
    expect(a.locator('.tree-row[data-id="a2"] .badge.comments')).not_to_have_class("badge comments open")

    # The "Open threads" filter now leaves a2 out; reopening brings it back.
    a.select_option("#tree-filter", "open-threads")
    expect(a.locator('.tree-row[data-id="a2"]')).to_have_count(0)
    b.locator("#comment-threads .thread button", has_text="Reopen").click()
    expect(a.locator('.tree-row[data-id="a2"]')).to_have_count(1)
    screenshot(a, "comments-two-browsers")

    root = Comment.objects.get(parent=None)
    assert root.resolved_at is None and root.replies.count() == 1
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text("".join(f"{k}: {v} ms\n" for k, v in timings.items()))
    print(timings)


def test_a_team_owner_turns_viewers_comments_off_on_the_teams_page(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    olga, vera = account("olga"), account("vera")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=olga, role="owner")
    TeamMembership.objects.create(team=team, user=vera, role="viewer")
    session = services.import_jsonl(actor=olga, data=session_file(small_tree()), filename="s.jsonl").session
    services.share_with_team(session=session, team=team, access="viewer", actor=olga)

    page = sign_in(open_browser(), "olga")
    page.goto(f"{server_url}/teams/")
    switch = page.locator(f'section.team[data-team="{team.pk}"] .viewers-comment input')
    expect(switch).to_be_checked()
    switch.uncheck()
    expect(page.locator(f'section.team[data-team="{team.pk}"] .viewers-comment')).to_contain_text(
        "Only owners and editors comment now."
    )

    viewer = sign_in(open_browser(), "vera")
    viewer.goto(f"{server_url}/sessions/{session.pk}/#entry=a2")
    viewer.wait_for_selector("body[data-ready=true]")
    expect(viewer.locator("#comments")).to_be_visible()
    viewer.click("#comments-toggle")
    expect(viewer.locator("#comments-body")).to_be_visible()
    expect(viewer.locator("#comment-form")).to_be_hidden()  # reads, cannot write
    expect(viewer.locator("#comment-refused")).to_contain_text("turned viewers' comments off")
    viewer.goto(f"{server_url}/teams/")
    expect(viewer.locator(f'section.team[data-team="{team.pk}"] .viewers-comment input')).to_be_disabled()
