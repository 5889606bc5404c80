"""Browser-test fixtures: a real ASGI server on 127.0.0.1 and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection

from tests import procs

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
PASSWORD = "pw-for-browser-tests"


def ensure_chromium() -> None:
    """Install Debian's Chromium when it is missing; skip only if that cannot be done."""
    if os.access(CHROMIUM, os.X_OK):
        return
    apt = shutil.which("apt-get")
    if apt is not None and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run([apt, "update", "-q"], env=env, check=False, capture_output=True)
        subprocess.run([apt, "install", "-y", "-q", "chromium"], env=env, check=False, capture_output=True)
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is missing and could not be installed (needs root and apt-get)")


def database_url() -> str:
    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        pytest.skip("browser tests serve the app from a second process, which needs PostgreSQL")
    return procs.database_url()


SERVER_APP_NAME = "piweb-browser-test-server"


@pytest.fixture(scope="session")
def server_url(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """Serve piweb with daphne on a free port, against the test database and the test Redis."""
    port = procs.free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_DEBUG": "1",
        # Branch summaries and compactions run inside the request, with the offline summarizer.
        "PIWEB_CELERY_EAGER": "1",
        "PYTHONUNBUFFERED": "1",
        "PGAPPNAME": SERVER_APP_NAME,
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
        procs.wait_for_port(port, process, log.name)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        # The server's pooled connections may outlive it for a moment; the test database is dropped next.
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = %s",
                [SERVER_APP_NAME],
            )


@pytest.fixture
def playwright(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    ensure_chromium()
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are still
    # plain synchronous code, so Django's guard against ORM use inside a loop does not apply here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        yield p


@pytest.fixture
def open_browser(playwright: Any) -> Iterator[Callable[[], Any]]:
    """Return a factory of fresh browsers (each its own profile), all closed after the test."""
    contexts: list[Any] = []
    folders: list[str] = []

    def launch(width: int = 1400, height: int = 850, color_scheme: str = "light", **extra: Any) -> Any:
        folder = tempfile.mkdtemp(prefix="piweb-chromium-")
        folders.append(folder)
        context = playwright.chromium.launch_persistent_context(
            folder,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": width, "height": height},
            color_scheme=color_scheme,
            **extra,
        )
        context.set_default_timeout(15000)
        contexts.append(context)
        return context

    yield launch
    for context in contexts:
        context.close()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def make_account(username: str, **fields: Any) -> Any:
    """Create a user who can sign in with ``PASSWORD`` on the server process, which checks passwords
    with the default hashers, not the suite's fast one (a cheap PBKDF2 hash suits both)."""
    password = PBKDF2PasswordHasher().encode(PASSWORD, "browser-tests", iterations=1000)
    return get_user_model().objects.create(username=username, password=password, **fields)


@pytest.fixture
def account(db: None) -> Callable[..., Any]:
    """Return ``account(username, **fields)``: a user the browser can sign in as."""
    return make_account


def signed_in(context: Any, base: str, username: str) -> Any:
    """Sign ``username`` in through the login form of the server at ``base``; return the page."""
    page = context.pages[0] if context.pages else context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    return page


@pytest.fixture
def sign_in(server_url: str) -> Callable[[Any, str], Any]:
    """Return ``sign_in(context, username)``: a page signed in through the suite server's login form."""
    return lambda context, username: signed_in(context, server_url, username)


@pytest.fixture
def screenshot() -> Callable[[Any, str], None]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> None:
        # Chromium sometimes refuses a capture while a busy machine is still compositing; try again.
        for attempt in range(3):
            try:
                page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
                return
            except Exception as error:  # playwright's Error; only the capture failed, not the page
                if attempt == 2 or "capture" not in str(error).lower():
                    raise
                page.wait_for_timeout(500)

    return take


AXE_DIR = REPO / "tests" / "ui" / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core from the lockfile in tests/ui/axe (installed with ``npm ci`` when missing)."""
    if not AXE_JS.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed to install axe-core for the accessibility checks")
        subprocess.run([npm, "ci", "--prefix", str(AXE_DIR), "--no-audit", "--no-fund"], check=True)
    return AXE_JS.read_text()


@pytest.fixture
def axe(axe_source: str) -> Callable[[Any], list[dict[str, Any]]]:
    """Return ``check(page)``: the serious and critical axe violations on the page (WCAG 2.1 A/AA).

    The script is evaluated through the debugging protocol, so the page's CSP needs no exception.
    """

    def check(page: Any) -> list[dict[str, Any]]:
        page.evaluate(axe_source)
        result = page.evaluate(
            """async () => {
              const r = await axe.run(document, {runOnly: {type: "tag",
                values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}});
              return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + n.failureSummary)}));
            }"""
        )
        return [v for v in result if v["impact"] in ("serious", "critical")]

    return check
