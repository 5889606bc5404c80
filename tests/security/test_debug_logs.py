"""At DEBUG, the servers' logs still hold no secret, no search text and no page context.

Each server the README offers runs with every log level at DEBUG (``PIWEB_LOG_LEVEL``,
``DJANGO_LOG_LEVEL``). A signed-in person opens the main pages, searches, follows a share link and pastes
tokens and a provider key into paths that do not exist; then everything the process wrote is searched
for those values.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live.servers import server_env

from .conftest import SERVERS, Server, Stack

EMAIL = "owner.person@example.org"
SEARCH = "findme" + secrets.token_hex(6)
# A provider key of the shape the secret scanner knows (GitHub's), which piweb itself never issues.
PROVIDER_KEY = "ghp_" + secrets.token_hex(18)


@pytest.fixture(scope="module")
def debug_servers(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    logs: Path = tmp_path_factory.mktemp("debug-logs")
    env = server_env(stack.redis_url, PIWEB_LOG_LEVEL="DEBUG", DJANGO_LOG_LEVEL="DEBUG")
    servers = {kind: Server(kind, env, logs) for kind in SERVERS}
    started = []
    try:
        for server in servers.values():
            server.service.start()
            started.append(server)
        yield servers
    finally:
        for server in started:
            server.service.stop()


def _settled(server: Server, start: int, lines: int) -> str:
    """What the server wrote since ``start``, once its access log has ``lines`` more lines."""
    deadline = time.monotonic() + 5
    while True:
        written = server.log()[start:]
        if written.count('"GET ') >= lines:
            return written
        assert time.monotonic() < deadline, f"the access-log lines are missing:\n{written}"
        time.sleep(0.05)


@pytest.mark.parametrize("server", SERVERS)
def test_pages_and_pasted_secrets_leave_no_trace_in_a_debug_log(
    stack: Stack, debug_servers: dict[str, Server], server: str
) -> None:
    state = stack.current()
    with stack.db():
        state.world.owner.email = EMAIL
        state.world.owner.save(update_fields=["email"])
    link = state.world.link.raw_token
    api_token = state.tokens["owner"]
    session = state.world.session.pk
    pages = [
        f"/?q={SEARCH}",
        f"/sessions/{session}/",
        "/teams/",
        f"/teams/{state.world.team.pk}/",
        "/tokens/",
        f"/api/sessions/?q={SEARCH}&page=1",
    ]
    anonymous = [
        "/accounts/login/",
        f"/s/{link}/",
        f"/nothing/{link}/",
        f"/api/nothing/{api_token}/",
        f"/static/{api_token}.js",
        f"/nothing/{PROVIDER_KEY}/?q={SEARCH}",
        f"/nothing/?{api_token}",
    ]
    target = debug_servers[server]
    before = len(target.log())
    with httpx_client(target, cookie=state.cookies["owner"]) as http:
        for path in pages:
            assert http.get(path).status_code == 200, path
    with httpx_client(target) as http:
        for path in anonymous:
            http.get(path)
    written = _settled(target, before, len(pages) + len(anonymous))

    # Logging really ran at DEBUG: the access lines and Django's own debug records are there.
    assert "DEBUG" in written and '"GET /sessions/' in written
    for name, value in [
        ("the share-link token", link),
        ("the API token", api_token),
        ("the provider key", PROVIDER_KEY),
        ("the search text", SEARCH),
        ("an email address", EMAIL),
    ]:
        assert value not in written, f"{name} appears in the {server} debug log:\n{written}"
    # No template dumped its context on a missing variable.
    assert "Failed lookup" not in written and "sso_origin" not in written, written


def httpx_client(server: Server, cookie: str | None = None) -> httpx.Client:
    headers = {"Cookie": cookie} if cookie else {}
    return httpx.Client(base_url=server.base_url, timeout=10, headers=headers)
