"""The pages in real headless Chromium against a real ASGI server: what a user sees and does."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from core import realtime
from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import assistant_message as assistant_msg
from tests.factories import session_file, small_tree
from tests.factories import user_message as user_msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def store(owner: Any, entries: list[dict[str, Any]], header: dict[str, Any] | None = None) -> ChatSession:
    return services.import_jsonl(actor=owner, data=session_file(entries, header), filename="s.jsonl").session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def row(page: Any, entry_id: str) -> Any:
    return page.locator(f'.tree-row[data-id="{entry_id}"]')


def test_import_a_session_and_see_its_tree(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any, tmp_path: Path
) -> None:
    account("ada")
    page = sign_in(open_browser(), "ada")
    screenshot(page, "session-list-empty")
    a2 = '{"type":"message","id":"a2"'
    broken = session_file(small_tree(rich=True)).decode().replace(a2, "{not json\n" + a2)
    upload = tmp_path / "work.jsonl"
    upload.write_text(broken)

    page.click("text=Import")
    page.wait_for_selector("body[data-ready=true]")  # the page's module has attached its handlers
    page.set_input_files("#file-input", str(upload))
    page.wait_for_selector(".import-item[data-state=done] .open-imported")
    assert "Imported 6 entries" in page.inner_text(".import-item .import-result")
    assert page.locator("table.skipped tbody tr").count() == 1
    assert page.get_attribute(".import-item .progress-bar", "value") == "100"
    screenshot(page, "import-done")

    page.click(".open-imported")
    page.wait_for_selector("body[data-ready=true]")
    # Both branches are drawn; the leaf is the current node and its path is highlighted.
    for entry_id in ("u1", "a1", "u2", "a2", "u3", "a3"):
        assert row(page, entry_id).count() == 1, entry_id
    assert "current" in row(page, "a3").get_attribute("class")
    assert "on-path" in row(page, "u3").get_attribute("class")
    assert "on-path" not in row(page, "u2").get_attribute("class")
    assert "second answer" in page.inner_text("#branch")
    assert "first question" not in page.inner_text("#branch")
    # The context panel fills in after the branch; wait for it rather than racing it.
    expect(page.locator("#context .context-item")).to_have_count(4)
    expect(page.locator("#context-tokens")).to_have_text(re.compile(r"≈ \d+ tokens"))
    page.wait_for_selector("#live-status[data-state=live]")
    screenshot(page, "session-page")

    # Selecting another node shows its branch and what the model would see from there.
    row(page, "a2").click()
    expect(page.locator("#branch")).to_contain_text("first question")
    assert "second question" not in page.inner_text("#branch")
    expect(page.locator("#context")).to_contain_text("first question")

    # Keyboard: up moves to the parent row, left folds a branch point's subtree.
    page.focus("#tree-scroll")
    page.keyboard.press("ArrowUp")
    page.wait_for_selector('.tree-row.selected[data-id="u2"]')
    row(page, "a1").click()
    page.focus("#tree-scroll")
    page.keyboard.press("ArrowLeft")
    expect(row(page, "u3")).to_have_count(0)
    page.keyboard.press("ArrowRight")
    page.wait_for_selector('.tree-row[data-id="u3"]')

    # Filters and search narrow the rows.
    page.select_option("#tree-filter", "user")
    expect(page.locator(".tree-row[data-id]")).to_have_count(4)  # u1, u2, u3 and the leaf
    assert page.locator(".tree-row.k-assistant").count() == 1
    page.select_option("#tree-filter", "default")
    # Search marks the matches in place and steps through them.
    page.fill("#tree-search", "second")
    expect(page.locator(".tree-row.hit")).to_have_count(2)
    expect(page.locator(".tree-row[data-id]")).to_have_count(6)
    expect(page.locator("#search-hits")).to_have_text("2 matches")
    page.press("#tree-search", "Enter")
    expect(page.locator("#search-hits")).to_have_text("1 of 2")
    page.wait_for_selector('.tree-row.selected[data-id="u3"]')
    page.click("#search-next")
    page.wait_for_selector('.tree-row.selected[data-id="a3"]')
    page.click("#search-prev")
    page.wait_for_selector('.tree-row.selected[data-id="u3"]')

    page.click("text=Sessions")
    expect(page.locator("a.session-link")).to_have_count(1)

    def search(words: str) -> None:
        # Each search loads a new page: wait for it, or the count below reads the page before it.
        page.fill("input[name=q]", words)
        with page.expect_navigation():
            page.click("button:text('Search')")

    search("first question")  # message text
    expect(page.locator("a.session-link")).to_have_count(1)
    search("nothing like this")
    expect(page.locator("a.session-link")).to_have_count(0)
    search("")
    expect(page.locator("a.session-link")).to_have_count(1)
    screenshot(page, "session-list")


def test_continue_from_another_branch_with_a_summary(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("bea"), small_tree(rich=True))
    page = sign_in(open_browser(), "bea")
    open_session(page, f"{server_url}/sessions/{session.pk}/")

    row(page, "a2").click()
    expect(page.locator("#selected-info")).to_have_attribute("title", "a2")
    page.click("#node-actions button[data-action=navigate]")
    expect(page.locator("#navigate-dialog")).to_be_visible()
    page.check("#navigate-dialog input[name=summarize]")
    page.fill("#navigate-dialog textarea[name=instructions]", "Focus on the second question")
    page.click("#navigate-dialog button[value=ok]")

    summary_row = page.locator(".tree-row.k-branch_summary")
    summary_row.wait_for()
    assert "current" in summary_row.get_attribute("class")
    assert page.locator(".tree-row.k-branch_summary .badge.summary").count() == 1
    page.wait_for_selector("#branch .msg-summary")
    # Written by the offline summarizer (no model configured), and labelled so.
    expect(page.locator("#branch .msg-summary .badge.offline")).to_have_text("offline summary")
    expect(summary_row.locator(".badge.offline")).to_be_visible()
    assert page.is_hidden("#operation-banner")
    session.refresh_from_db()
    summary = services.export_jsonl(session)
    lines = b"".join(summary).decode().splitlines()
    assert '"type":"branch_summary"' in lines[-1] and '"parentId":"a2"' in lines[-1]
    assert session.leaf_entry_id == summary_row.get_attribute("data-id")
    # The summary is the first thing the model sees after the new branch's own messages.
    expect(page.locator("#context .msg-summary")).to_have_count(1)
    # It says what it replaced: the two messages of the branch that was left (u3, a3).
    expect(page.locator("#context .msg-summary .replaced")).to_have_text("replaced 2 messages")
    screenshot(page, "navigate-with-summary")


def test_fork_lands_in_the_new_session_with_the_message_in_the_editor(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("cy"), small_tree(rich=True))
    page = sign_in(open_browser(), "cy")
    open_session(page, f"{server_url}/sessions/{session.pk}/")

    row(page, "u2").click()
    page.click("#node-actions button[data-action=fork]")
    assert page.is_visible("#fork-position")
    page.click("#fork-dialog button[value=ok]")
    page.wait_for_url(re.compile(rf"/sessions/(?!{session.pk}/)\d+/"))
    page.wait_for_selector("body[data-ready=true]")

    fork = ChatSession.objects.exclude(pk=session.pk).get()
    assert f"/sessions/{fork.pk}/" in page.url
    assert page.input_value("#composer-text") == "first question"
    # Forking before u2 copies the path up to its parent.
    assert row(page, "a1").count() == 1
    assert row(page, "u2").count() == 0 and row(page, "u3").count() == 0
    assert "forked from" in page.inner_text(".session-bar")
    screenshot(page, "fork")


def test_a_second_browser_sees_new_entries_and_streaming_text_live(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("dee")
    session = store(owner, small_tree(rich=True))
    url = f"{server_url}/sessions/{session.pk}/"
    first = sign_in(open_browser(), "dee")
    second = sign_in(open_browser(), "dee")
    for page in (first, second):
        open_session(page, url)
        page.wait_for_selector("#live-status[data-state=live]")

    # A label set in the first browser appears in the second.
    row(first, "u1").click()
    first.click("#node-actions button[data-action=label]")
    first.fill("#label-dialog input[name=label]", "start")
    first.click("#label-dialog button[value=ok]")
    second.wait_for_selector('.tree-row[data-id="u1"] .badge.label:text("start")')

    # An append from elsewhere reaches both, and the second browser follows the leaf to it.
    services.append_entries(
        session=session, actor=session.owner, entries=[user_msg("u9", "a3", "a live question")]
    )
    for page in (first, second):
        row(page, "u9").wait_for()
    expect(second.locator("#branch")).to_contain_text("a live question")

    # Streaming text arrives piece by piece.
    for piece in ("Str", "eam", "ing ok"):
        realtime.broadcast(session.pk, "run_delta", delta=piece, run="r1", index=0, kind="text")
    expect(second.locator("#branch .streaming .stream-text")).to_have_text("Streaming ok")
    screenshot(second, "live-second-browser")
    services.append_entries(
        session=session, actor=session.owner, entries=[assistant_msg("a9", "u9", "Streaming ok")]
    )
    expect(second.locator("#branch .streaming")).to_have_count(0)
    row(second, "a9").wait_for()


TS = "2026-01-02T03:04:09.000Z"
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def hostile_session() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    entries = [
        user_msg("x1", None, f"{XSS} [click me](javascript:window.__pwned=3) <svg onload=window.__pwned=4>"),
        assistant_msg(
            "x2",
            "x1",
            f"Here: {XSS}\n\n```html\n{XSS}\n```\n\n"
            "[link](javascript:alert(1)) <iframe src=javascript:alert(1)>",
            blocks=[
                {"type": "thinking", "thinking": XSS},
                {
                    "type": "toolCall",
                    "id": "t1",
                    "name": "<img src=x onerror=window.__pwned=5>",
                    "arguments": {"cmd": XSS},
                },
                {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"},
            ],
        ),
        {
            "type": "message",
            "id": "x3",
            "parentId": "x2",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "t1",
                "toolName": XSS,
                "content": [{"type": "text", "text": XSS}],
                "isError": True,
                "timestamp": 3,
            },
        },
        {"type": "label", "id": "x4", "parentId": "x3", "timestamp": TS, "targetId": "x1", "label": XSS},
        {"type": "session_info", "id": "x5", "parentId": "x4", "timestamp": TS, "name": XSS},
        {
            "type": "branch_summary",
            "id": "x6",
            "parentId": "x5",
            "timestamp": "2026-01-02T03:04:10.000Z",
            "fromId": "x2",
            "summary": f"# {XSS}\n- [a](javascript:window.__pwned=6)",
        },
    ]
    header = {"type": "session", "version": 3, "id": "hostile", "timestamp": TS, "cwd": XSS}
    return entries, header


def test_script_payloads_in_a_session_never_run(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    entries, header = hostile_session()
    session = store(account("eve"), entries, header)
    page = sign_in(open_browser(), "eve")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    page.goto(f"{server_url}/")
    assert XSS in page.inner_text("a.session-link")  # the name shows as text
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.select_option("#tree-filter", "all")
    for entry_id in ("x1", "x2", "x3", "x6"):
        row(page, entry_id).click()
        page.wait_for_selector(f'#branch .branch-item.selected[data-id="{entry_id}"]')
        page.evaluate("document.querySelectorAll('main details').forEach(d => d.open = true)")
    # The context panel of the last selection has rendered the same hostile content too.
    expect(page.locator("#context .context-item").first).to_be_visible()
    page.wait_for_timeout(300)
    screenshot(page, "hostile-session")

    assert page.evaluate("window.__pwned") is None
    assert dialogs == []
    # The payloads are shown as text, and no markup from the session reached the DOM.
    assert XSS in page.inner_text("#branch")
    # The page's own config is the one script element in <main>, and it is JSON data, not code.
    assert page.locator("main script").count() == 1
    assert page.get_attribute("main script", "type") == "application/json"
    own_icons = "#comments-toggle svg, #composer-attach svg"  # the page's two icons, drawn by its scripts
    injected = f"main iframe, main svg:not({own_icons}), main img[src=x], #tree-scroll img"
    assert page.locator(injected).count() == 0
    assert page.locator("#branch a[href^=javascript], #context a[href^=javascript]").count() == 0
    assert page.locator("#branch img.inline-image").count() == 0  # the svg "image" is refused


def long_session(count: int) -> list[dict[str, Any]]:
    """A chain of ``count`` alternating messages with one early side branch."""
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for i in range(count):
        entry_id = f"e{i}"
        make = user_msg if i % 2 == 0 else assistant_msg
        entries.append(make(entry_id, parent, f"message number {i}"))
        parent = entry_id
    entries.append(user_msg("side", "e10", "a side branch"))
    # Keep the leaf at the end of the long chain.
    tip = assistant_msg("tip", f"e{count - 1}", "the tip")
    entries.append({**tip, "timestamp": "2026-01-02T03:04:09.000Z"})
    return entries


def test_a_large_session_shows_its_first_screen_fast_with_few_rows_in_the_dom(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("fay"), long_session(30_000))
    page = sign_in(open_browser(), "fay")
    started = time.monotonic()
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.locator('.tree-row.current[data-id="tip"]').wait_for()
    elapsed = time.monotonic() - started
    # Generous for a loaded 2-core machine; reading the whole 30k path takes far longer than this.
    assert elapsed < 5, f"the tree took {elapsed:.1f}s to show"
    page.wait_for_selector("body[data-ready=true]")
    assert "current" in row(page, "tip").get_attribute("class")
    expect(page.locator("#branch")).to_contain_text("the tip")
    assert "not shown" in page.inner_text("#branch")  # only the newest part of a 30k path is drawn
    cards = page.locator("#branch .branch-item")
    expect(page.locator("#context-tokens")).to_have_text(re.compile(r"≈ [\d,]+ tokens"))
    expect(page.locator("#branch")).not_to_have_attribute("aria-busy", "true")  # a page still coming
    drawn = cards.count()
    assert drawn < 100
    page.click("#branch .older button")
    # A page of older entries goes above, in path order; the tip stays the last card.
    expect(cards).to_have_count(drawn + 60)
    ids = cards.evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    assert ids[-1] == "tip"
    assert ids[:-1] == [f"e{i}" for i in range(30_000 - len(ids) + 1, 30_000)]
    runs = page.locator(".tree-row.run")
    assert runs.count() >= 1
    assert "29,9" in page.inner_text("#tree-scroll")  # the long linear run is folded into one row

    # Opening the run loads the entries around it, and the list stays virtualized while scrolling.
    page.locator(".tree-row.run").last.click()
    row(page, "e11").wait_for()
    assert page.locator(".tree-row").count() < 120
    page.locator("#tree-scroll").evaluate("el => el.scrollTop = el.scrollHeight")
    row(page, "tip").wait_for()
    assert page.locator(".tree-row").count() < 120
    screenshot(page, "large-session")

    # Search covers the whole session, also entries never loaded: the hit opens in the tree.
    page.fill("#tree-search", "message number 15001")
    page.press("#tree-search", "Enter")
    expect(page.locator('.tree-row.selected[data-id="e15001"]')).to_be_visible()
    expect(page.locator("#search-hits")).to_have_text("1 of 1")
    hit = page.locator('#branch .branch-item.selected[data-id="e15001"]')
    expect(hit).to_contain_text("message number 15001")
    screenshot(page, "large-session-search")


def test_a_long_branch_loads_older_entries_as_it_is_scrolled_up_without_moving_the_view(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("scroller"), long_session(400))
    page = sign_in(open_browser(), "scroller")
    # Jump to an entry deep in the path: its branch ends with it, and older entries wait above.
    open_session(page, f"{server_url}/sessions/{session.pk}/#entry=e300")
    branch = page.locator("#branch")
    cards = branch.locator(".branch-item")
    expect(cards.last).to_have_attribute("data-id", "e300")
    expect(cards.last).to_have_class(re.compile("selected"))
    expect(page.locator("#context-tokens")).to_have_text(re.compile(r"≈ [\d,]+ tokens"))
    expect(branch).not_to_have_attribute("aria-busy", "true")
    drawn = cards.count()
    assert drawn < 100 and "not shown" in branch.inner_text()
    first = cards.first.get_attribute("data-id") or ""
    offset = "id => { const c = document.querySelector(`#branch [data-id=\"${id}\"]`); " \
        "return c.getBoundingClientRect().top - c.parentElement.getBoundingClientRect().top; }"  # fmt: skip
    # Where that card will be once the branch is scrolled to its top (measured first: the page is quick).
    before = page.evaluate(offset, first) + branch.evaluate("el => el.scrollTop")
    branch.evaluate("el => el.scrollTop = 0")
    expect(cards).to_have_count(drawn + 60)
    expect(branch).not_to_have_attribute("aria-busy", "true")
    # The card that was on top stays where it was: the page went in above it.
    assert abs(page.evaluate(offset, first) - before) < 2
    ids = cards.evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    start = int(ids[0][1:])
    assert ids == [f"e{i}" for i in range(start, 301)]
    screenshot(page, "branch-scrolled-up")


def test_a_long_context_loads_the_messages_between_its_head_and_tail_on_scroll(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("contexter"), long_session(200))
    page = sign_in(open_browser(), "contexter")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    context = page.locator("#context")
    items = context.locator(".context-item")
    expect(page.locator("#context-leaf")).to_have_text("201 messages")
    # The first ten and the newest forty; the 151 between them are counted, not drawn.
    expect(items).to_have_count(50)
    gap = context.locator(".context-gap")
    expect(gap).to_contain_text("151 more messages")
    context.evaluate("el => el.scrollTop = el.querySelector('.context-gap').offsetTop - el.offsetTop")
    expect(items).to_have_count(110)
    expect(gap).to_contain_text("91 more messages")
    ids = items.evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    # e0…e9, then the page just before the tail and the tail itself, in order up to the leaf.
    assert ids == [f"e{i}" for i in range(10)] + [f"e{i}" for i in range(101, 200)] + ["tip"]
    # The button does the same without scrolling (a click that scrolls would also bring a page).
    gap.locator("button").dispatch_event("click")
    expect(items).to_have_count(170)
    gap.locator("button").dispatch_event("click")
    expect(gap).to_have_count(0)
    assert items.evaluate_all("nodes => nodes.map(n => n.dataset.id)") == [f"e{i}" for i in range(200)] + [
        "tip"
    ]


def test_continue_in_pi_shows_the_pull_command_for_the_selected_node(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("pi-user"), small_tree(rich=True))
    page = sign_in(open_browser(), "pi-user")
    open_session(page, f"{server_url}/sessions/{session.pk}/")

    row(page, "a2").click()
    page.click("#node-actions button[data-continue-in-pi]")
    dialog = page.locator("#continue-in-pi-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("code").first).to_have_text(f"piweb-sync pull {session.pk} --at a2")
    screenshot(page, "continue-in-pi")
    dialog.locator("button[value=ok]").click()
    row(page, "a3").click()  # the leaf: no --at
    page.click("#node-actions button[data-continue-in-pi]")
    expect(dialog.locator("code").first).to_have_text(f"piweb-sync pull {session.pk}")
