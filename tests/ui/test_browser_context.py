"""The context panel in Chromium: the leaf of a 100k-entry session without compactions shows its context
within a second, and a new selection clears the previous entry's numbers at once and shows progress."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import session_file, small_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)

ENTRIES = 100_000
STAMP = "2026-01-02T03:04:05.000Z"
# When the first context card appears, from the navigation's start.
MARKS = """
(() => {
  const marks = window.__marks = {};
  new MutationObserver(() => {
    if (!marks.context && document.querySelector("#context .context-item")) marks.context = performance.now();
  }).observe(document, {childList: true, subtree: true});
})();
"""


def long_uncompacted(entries: int) -> bytes:
    """A chain of ``entries`` turns with no compaction: the whole history is the leaf's context."""
    header = {"type": "session", "version": 3, "id": "long-uncompacted", "timestamp": STAMP, "cwd": "/w"}
    lines = [json.dumps(header)]
    parent = None
    for i in range(entries):
        if i % 2 == 0:
            message: dict[str, Any] = {"role": "user", "content": f"question {i}", "timestamp": 1}
        else:
            usage = {"input": 40 + i, "output": 9, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 49 + i}
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {i}"}],
                "provider": "p",
                "model": "m",
                "usage": usage,
                "stopReason": "stop" if i % 10 != 5 else "aborted",
                "timestamp": 1,
            }
        line = {"type": "message", "id": f"m{i}", "parentId": parent, "timestamp": STAMP, "message": message}
        lines.append(json.dumps(line, separators=(",", ":")))
        parent = f"m{i}"
    return ("\n".join(lines) + "\n").encode()


def test_the_leaf_of_a_100k_uncompacted_session_shows_its_context_without_reading_the_history(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("long")
    session: ChatSession = services.import_jsonl(actor=owner, data=long_uncompacted(ENTRIES)).session
    context = open_browser()
    page = sign_in(context, "long")
    context.add_init_script(MARKS)
    url = f"{server_url}/sessions/{session.pk}/"
    page.goto(url)  # warm-up: the server's caches and the browser's compiled modules
    page.wait_for_selector("#context .context-item")
    times: list[float] = []
    for _ in range(3):
        page.goto(url)
        page.wait_for_function("() => window.__marks.context")
        times.append(page.evaluate("window.__marks.context"))
    # The newest message is the leaf's, and the panel counts every message of the history.
    expect(page.locator("#context .context-item").last).to_contain_text(f"answer {ENTRIES - 1}")
    expect(page.locator("#context-leaf")).to_have_text(f"{ENTRIES:,} messages")
    # The leaf's usage anchors the estimate: what the provider reported for it, nothing after it.
    expect(page.locator("#context-tokens")).to_have_text(f"≈ {49 + ENTRIES - 1:,} tokens")
    # The one-second goal is measured by `make bench` (browser rows) on a quiet machine; here, beside the
    # rest of the suite on two cores, the test only refuses a page that reads the whole history.
    assert min(times) <= 3000, f"context shown after {times} ms"


def test_a_new_selection_clears_the_old_numbers_and_shows_progress(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner = account("mover")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    context = open_browser()
    page = sign_in(context, "mover")
    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#context .context-item").first).to_be_visible()
    old_count = page.locator("#context-leaf").inner_text()
    target = page.locator(".tree-row[data-id]:not(.selected)").first
    target_id = target.get_attribute("data-id")
    held: list[Any] = []
    page.route("**/context/?*", lambda route: held.append(route))  # held until released below
    target.click()
    # At once: no number or card of the previous entry is left, and the panel says it is loading.
    expect(page.locator("#context-tokens")).to_have_text("loading…")
    expect(page.locator("#context [role=status]")).to_contain_text(f"Loading the context at {target_id}")
    expect(page.locator("#context .context-item")).to_have_count(0)
    expect(page.locator("#context-leaf")).to_have_text("")
    assert page.locator("#context-breakdown > *").count() == 0
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the context request was not made"
    for route in held:
        route.continue_()
    page.unroute("**/context/?*")
    expect(page.locator("#context .context-item").first).to_be_visible()
    expect(page.locator("#context-tokens")).to_have_text(re.compile(r"≈ [\d,]+ tokens"))
    expect(page.locator("#context-leaf")).not_to_have_text("")
    assert page.locator("#context [role=status]").count() == 0
    assert old_count  # the first selection's count was shown before
