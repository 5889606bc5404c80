"""The tree panel in Chromium: lanes that keep their width, filters that hide rows, search located in
the tree, treeview semantics, the sibling switcher, and each page loading its data once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import assistant_message as assistant_msg
from tests.factories import session_file, small_tree
from tests.factories import user_message as user_msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def store(owner: Any, entries: list[dict[str, Any]]) -> ChatSession:
    return services.import_jsonl(actor=owner, data=session_file(entries), filename="s.jsonl").session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def row(page: Any, entry_id: str) -> Any:
    return page.locator(f'.tree-row[data-id="{entry_id}"]')


def nested_branches(points: int) -> list[dict[str, Any]]:
    """A main line where every user message was retried, and each retry retried again inside it:
    ``points`` branch points, nested as deep as they go."""
    entries: list[dict[str, Any]] = [
        user_msg("r", None, "root question"),
        assistant_msg("ra", "r", "root answer"),
    ]
    parent = "ra"
    for i in range(points):
        # Two children under ``parent``: the retry that nests further, and a short alternative.
        entries.append(user_msg(f"alt{i}", parent, f"alternative {i}"))
        entries.append(assistant_msg(f"alta{i}", f"alt{i}", f"alternative answer {i}"))
        entries.append(user_msg(f"n{i}", parent, f"nested question {i}"))
        entries.append(assistant_msg(f"na{i}", f"n{i}", f"nested answer {i}"))
        parent = f"na{i}"
    return entries


def test_deep_nesting_keeps_text_inside_a_420px_panel(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("lane"), nested_branches(200))
    # 1400 px wide: the tree panel is 30 % of the page, 420 px.
    page = sign_in(open_browser(width=1400), "lane")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    panel = page.locator("#tree-scroll").bounding_box()
    expect(row(page, "na199")).to_have_class(re.compile(r"\bcurrent\b"))
    assert "on-path" in row(page, "n199").get_attribute("class")
    assert "selected" in row(page, "na199").get_attribute("class")
    screenshot(page, "tree-200-branch-points")
    assert 380 <= panel["width"] <= 440
    # 200 branch points are drawn, each marked as one.
    expect(page.locator(".tree-row.branch-point").first).to_be_visible()
    for where in (
        "el => el.scrollTop = 0",
        "el => el.scrollTop = el.scrollHeight / 2",
        "el => el.scrollTop = el.scrollHeight",
    ):
        page.locator("#tree-scroll").evaluate(where)
        page.wait_for_timeout(100)
        lefts = page.eval_on_selector_all(
            ".tree-row .text",
            "els => els.map(e => [e.getBoundingClientRect().left, e.getBoundingClientRect().width])",
        )
        assert lefts
        for left, width in lefts:
            # Text starts within the first 45 % of the panel and is never squeezed away.
            assert left - panel["x"] < panel["width"] * 0.45, left
            assert width > 0
    # The leaf is on the deepest branch: it is selected and in view, its path is highlighted.
    page.locator(".panel-head").first.click()
    page.evaluate("document.querySelector('#tree-scroll').focus()")
    page.keyboard.press("End")
    page.keyboard.press("Home")
    screenshot(page, "tree-200-branch-points-top")


def test_filters_hide_rows_and_leave_no_placeholders(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for i in range(120):
        make = user_msg if i % 2 == 0 else assistant_msg
        entries.append(make(f"m{i}", parent, f"message {i}"))
        parent = f"m{i}"
    session = store(account("filt"), entries)
    page = sign_in(open_browser(), "filt")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    assert page.locator(".tree-row.run").count() >= 1  # the long linear run is folded by default
    page.select_option("#tree-filter", "user")
    expect(page.locator(".tree-row.run")).to_have_count(0)
    expect(page.locator(".tree-row.k-user").first).to_be_visible()
    texts = page.locator(".tree-row .text").all_inner_texts()
    assert not any("entries" in t for t in texts)
    assert all(t.startswith("message") for t in texts)
    # All 60 user messages and the leaf are there (the list is virtualized: count the rows' height).
    height = page.locator(".tree-spacer").evaluate("el => el.getBoundingClientRect().height")
    assert height == 61 * 24
    screenshot(page, "tree-filter-user")


def test_tree_is_a_keyboard_treeview_with_levels_and_focus(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("kbd"), small_tree(rich=True))
    page = sign_in(open_browser(), "kbd")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    tree = page.locator("#tree-scroll")
    assert tree.get_attribute("role") == "tree"
    assert page.locator('[role="treeitem"]').count() == 6
    assert row(page, "a1").get_attribute("aria-expanded") == "true"
    levels = {r: row(page, r).get_attribute("aria-level") for r in ("u1", "u2", "u3")}
    assert levels["u1"] == "1" and {levels["u2"], levels["u3"]} == {"1", "2"}
    # Focus lands on the tree with the selection as the active descendant, ringed visibly.
    tree.focus()
    active = tree.get_attribute("aria-activedescendant")
    assert active and page.locator(f"#{active}").get_attribute("data-id") == "a3"
    outline = page.locator(".tree-row.selected").evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("Home")
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-id", "u1")
    assert page.locator(f"#{tree.get_attribute('aria-activedescendant')}").get_attribute("data-id") == "u1"
    page.keyboard.press("ArrowDown")
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-id", "a1")
    page.keyboard.press("ArrowLeft")  # folds the branch point
    expect(row(page, "a1")).to_have_attribute("aria-expanded", "false")
    expect(row(page, "u2")).to_have_count(0)
    page.keyboard.press("ArrowRight")
    expect(row(page, "a1")).to_have_attribute("aria-expanded", "true")
    screenshot(page, "tree-keyboard-focus")


def test_sibling_switcher_moves_between_alternatives(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("sib"), small_tree(rich=True))
    page = sign_in(open_browser(), "sib")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    card = page.locator('#branch .branch-item[data-id="u3"]')
    switch = card.locator(".siblings")
    expect(switch).to_be_visible()
    position = switch.locator(".sibling-pos").inner_text()
    assert re.fullmatch(r"[12]/2", position)
    # The other alternative opens at its newest tip: u2's branch ends at a2.
    switch.locator(".sibling-next").click()
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-id", "a2")
    expect(page.locator("#branch")).to_contain_text("first question")
    other = page.locator('#branch .branch-item[data-id="u2"] .sibling-pos')
    expect(other).not_to_have_text(position)
    screenshot(page, "sibling-switcher")
    page.locator('#branch .branch-item[data-id="u2"] .sibling-prev').click()
    expect(page.locator(".tree-row.selected")).to_have_attribute("data-id", "a3")


def test_the_session_page_loads_each_resource_once(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    session = store(account("once"), small_tree(rich=True))
    page = sign_in(open_browser(), "once")
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/api/" in r.url else None)
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("#live-status[data-state=live]")
    expect(page.locator("#context .context-item")).to_have_count(4)
    page.wait_for_timeout(1500)  # time for a duplicate load to show up
    counts = {
        kind: sum(f"/{kind}/" in url for url in seen) for kind in ("tree", "entries", "path", "context")
    }
    assert counts == {"tree": 1, "entries": 1, "path": 1, "context": 1}, seen


def test_the_leaf_row_is_never_blank(account: Any, open_browser: Any, sign_in: Any, server_url: str) -> None:
    entries = [
        *small_tree(rich=True),
        # An assistant message with only thinking, and the leaf with no text at all.
        assistant_msg("a4", "a3", "", blocks=[{"type": "thinking", "thinking": "hmm"}]),
    ]
    entries[-1]["message"]["content"] = [{"type": "thinking", "thinking": "hmm"}]
    session = store(account("blank"), entries)
    page = sign_in(open_browser(), "blank")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    text = row(page, "a4").locator(".text").inner_text()
    assert text.strip(), "the leaf row has no text"


def zebra_session() -> list[dict[str, Any]]:
    """A 300-entry line with "zebra" every 25 entries from c20 (12 hits), and a later side branch under
    c10 whose second entry is the 13th hit: in tree order it comes after the whole line."""
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for i in range(300):
        make = user_msg if i % 2 == 0 else assistant_msg
        text = f"zebra crossing number {i}" if i % 25 == 20 else f"message {i}"
        entries.append(make(f"c{i}", parent, text))
        parent = f"c{i}"
    entries.append(user_msg("side0", "c10", "a side question", "2026-01-02T03:05:00.000Z"))
    entries.append(assistant_msg("side1", "side0", "the zebra on the side"))
    entries.append({**assistant_msg("c300", "c299", "the tip"), "timestamp": "2026-01-02T03:06:00.000Z"})
    return entries


def test_search_steps_through_every_hit_and_opens_each_in_the_tree(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("zebra"), zebra_session())
    page = sign_in(open_browser(), "zebra")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    # Fold the branch point above every hit: stepping must open it again.
    row(page, "c10").locator(".toggle").click()
    expect(row(page, "side0")).to_have_count(0)

    page.fill("#tree-search", "zebra")
    expect(page.locator("#search-hits")).to_have_text("13 matches")
    page.press("#tree-search", "Enter")
    expect(page.locator("#search-hits")).to_have_text("1 of 13")
    expect(page.locator('.tree-row.selected.hit[data-id="c20"]')).to_be_visible()
    # Past the five hits a session shows across sessions: each one is opened inside its folded run.
    for n in range(2, 8):
        page.press("#tree-search", "Enter")
        expect(page.locator("#search-hits")).to_have_text(f"{n} of 13")
        hit = f"c{20 + 25 * (n - 1)}"
        expect(page.locator(f'.tree-row.selected.hit[data-id="{hit}"]')).to_be_visible()
    expect(page.locator('#branch .branch-item.selected[data-id="c170"]')).to_contain_text(
        "zebra crossing number 170"
    )
    screenshot(page, "search-hit-7-of-13")
    page.click("#search-prev")
    expect(page.locator("#search-hits")).to_have_text("6 of 13")
    expect(page.locator('.tree-row.selected.hit[data-id="c145"]')).to_be_visible()

    # "N more in this session" opens the page with the search active; previous wraps to the last hit,
    # on the side branch after the whole line.
    open_session(page, f"{server_url}/sessions/{session.pk}/?q=zebra")
    expect(page.locator("#tree-search")).to_have_value("zebra")
    expect(page.locator("#search-hits")).to_have_text("1 of 13")
    expect(page.locator('.tree-row.selected.hit[data-id="c20"]')).to_be_visible()
    page.click("#search-prev")
    expect(page.locator("#search-hits")).to_have_text("13 of 13")
    expect(page.locator('.tree-row.selected.hit[data-id="side1"]')).to_be_visible()
    expect(page.locator("#branch")).to_contain_text("the zebra on the side")
