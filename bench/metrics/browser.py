"""The session page in Chromium on the biggest session: time from navigation to tree rows and context on
screen, and from a click on a tree node to its highlight and its branch.

The app is served by daphne (as `make run` does) with DEBUG on so static files need no collect step; the
browser is Debian's Chromium driven by Playwright, signed in by a session cookie made here. Timings are
taken inside the page (performance.now() from the navigation start; a MutationObserver marks the moments
elements appear), the median of a few loads.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import big_size, require_db, session_pk
from bench.metrics.procs import REPO_DIR, free_port, stop, wait_for_port

CHROMIUM = "/usr/bin/chromium"
LOADS = 3
CLICKS = 5
FIRST_SCREEN_GOAL_S = 1.0
CLICK_GOAL_MS = 100.0

# Marks when the first tree row, the first context message, and the selected branch card appear.
MARKS = """
(() => {
  const marks = window.__marks = {};
  const seen = () => {
    if (!marks.tree && document.querySelector(".tree-row[data-id]")) marks.tree = performance.now();
    if (!marks.context && document.querySelector("#context .context-item")) marks.context = performance.now();
    if (!window.__clickAt) return;
    const id = window.__clickId;
    if (!marks.selected && document.querySelector(`.tree-row.selected[data-id="${id}"]`)) {
      marks.selected = performance.now() - window.__clickAt;
    }
    if (!marks.branch && document.querySelector(`#branch .branch-item.selected[data-id="${id}"]`)) {
      marks.branch = performance.now() - window.__clickAt;
    }
  };
  const watch = {childList: true, subtree: true, attributes: true, attributeFilter: ["class"]};
  new MutationObserver(seen).observe(document, watch);
  document.addEventListener("pointerdown", (event) => {
    const row = event.target.closest(".tree-row[data-id]");
    if (!row) return;
    window.__clickId = row.dataset.id;
    window.__clickAt = performance.now();
    marks.selected = marks.branch = undefined;
  }, true);
})();
"""


def _cookie_for_bench_user() -> tuple[str, str]:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    user: Any = bench_user()
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return settings.SESSION_COOKIE_NAME, str(store.session_key)


def _serve(port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update({"DJANGO_DEBUG": "1", "PIWEB_LOG_LEVEL": "WARNING", "DJANGO_LOG_LEVEL": "WARNING"})
    return subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
        cwd=REPO_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _measure(url: str, cookie: tuple[str, str]) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"tree": [], "context": [], "selected": [], "branch": []}
    folder = tempfile.mkdtemp(prefix="piweb-bench-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                folder,
                executable_path=CHROMIUM,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
                headless=True,
                viewport={"width": 1440, "height": 900},
            )
            context.add_cookies([{"name": cookie[0], "value": cookie[1], "domain": "127.0.0.1", "path": "/"}])
            context.add_init_script(MARKS)
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(60_000)
            page.goto(url)  # warm-up: server caches and the browser's compiled scripts
            page.wait_for_selector("body[data-ready=true]")
            for _ in range(LOADS):
                page.goto(url)
                page.wait_for_function("() => window.__marks.tree && window.__marks.context")
                marks = page.evaluate("window.__marks")
                out["tree"].append(marks["tree"])
                out["context"].append(marks["context"])
            page.wait_for_selector("body[data-ready=true]")
            rows = page.locator(".tree-row[data-id]:not(.selected)")
            for i in range(CLICKS):
                target = rows.nth(i % max(1, rows.count()))
                target.click()
                page.wait_for_function("() => window.__marks.selected >= 0 && window.__marks.branch >= 0")
                marks = page.evaluate("window.__marks")
                out["selected"].append(marks["selected"])
                out["branch"].append(marks["branch"])
            context.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


@metric("browser")
def browser(ctx: Context) -> list[Result]:
    """The biggest session's page in Chromium: first screen and click response."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"{CHROMIUM} is missing (make browser installs it)")
    require_db(ctx)
    size = big_size(ctx)
    pk = session_pk(ctx, size)
    cookie = _cookie_for_bench_user()
    port = free_port()
    proc = _serve(port)
    try:
        wait_for_port(port, proc)
        found = _measure(f"http://127.0.0.1:{port}/sessions/{pk}/", cookie)
    finally:
        stop(proc)
    first = [max(t, c) / 1000 for t, c in zip(found["tree"], found["context"], strict=True)]
    note = f"{size} session, Chromium 1440×900, daphne (DEBUG on), median of {LOADS} loads"
    tree = statistics.median(found["tree"]) / 1000
    context = statistics.median(found["context"]) / 1000
    return [
        at_most(
            f"browser: {size} session usable (tree rows and context shown) after navigation",
            statistics.median(first),
            "s",
            FIRST_SCREEN_GOAL_S,
            note=f"{note}; tree rows {tree:.2f} s, context {context:.2f} s (aim 0.5 s)",
        ),
        at_most(
            f"browser: click on a tree node → row selected ({size})",
            statistics.median(found["selected"]),
            "ms",
            CLICK_GOAL_MS,
            note=f"median of {CLICKS} clicks on different rows",
        ),
        at_most(
            f"browser: click on a tree node → its branch drawn ({size})",
            statistics.median(found["branch"]),
            "ms",
            CLICK_GOAL_MS,
            note=f"median of {CLICKS} clicks; includes the /path/ request with rendered messages",
        ),
    ]


__all__ = ["browser"]
