"""No secret reaches the servers' logs: share-link tokens, API tokens and password-reset tokens.

Each case sends requests that carry one kind of secret the way a client or a careless user would (in
the path, in the query, in a header, to a route that does not exist so Django warns ``Not Found``), then
greps everything the real server process wrote. Every server the README offers is checked.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from websockets.asyncio.client import connect

from .conftest import SERVERS, Current, Stack


@dataclass(frozen=True, slots=True)
class Secret:
    name: str
    value: Callable[[Current], str]
    requests: Callable[[Current, str], list[tuple[str, str, dict[str, str]]]]


def _link(state: Current) -> str:
    return state.world.link.raw_token


def _api(state: Current) -> str:
    return state.tokens["owner"]


FAKE_LINK = "nolink" + secrets.token_hex(20)
RESET = "c8k2x1-" + secrets.token_hex(16)

SECRETS = [
    Secret(
        "share link in the page path",
        _link,
        lambda s, v: [("GET", f"/s/{v}/", {}), ("GET", f"/s/{v}/?x=1", {})],
    ),
    Secret(
        "unknown share link (Not Found warning)", lambda s: FAKE_LINK, lambda s, v: [("GET", f"/s/{v}/", {})]
    ),
    Secret(
        "share link in the query",
        _link,
        lambda s, v: [
            ("GET", f"/api/sessions/{s.world.session.pk}/?link={v}", {}),
            ("GET", f"/api/sessions/{s.world.session.pk}/tree/?link={v}&x=1", {}),
            ("GET", f"/sessions/{s.world.session.pk}/?link={v}", {}),
        ],
    ),
    Secret(
        "share link in its header",
        _link,
        lambda s, v: [("GET", f"/api/sessions/{s.world.session.pk}/", {"X-Share-Token": v})],
    ),
    Secret(
        "API token in its header, refused and accepted",
        _api,
        lambda s, v: [
            ("GET", "/api/sessions/", {"Authorization": f"Token {v}"}),
            ("GET", "/api/sessions/", {"Authorization": f"Bearer {v}x"}),
            ("GET", "/api/nothing-here/", {"Authorization": f"Token {v}"}),
        ],
    ),
    Secret(
        "API token pasted into a query",
        _api,
        lambda s, v: [("GET", f"/api/sessions/?token={v}", {}), ("GET", f"/nothing/?access_token={v}", {})],
    ),
    Secret(
        "API token key in the revoke path",
        lambda s: s.tokens["viewer"][:15],
        lambda s, v: [("DELETE", f"/api/tokens/{v}/", {"Authorization": f"Token {s.tokens['viewer']}"})],
    ),
    Secret(
        "password-reset token",
        lambda s: RESET,
        lambda s, v: [("GET", f"/accounts/reset/MQ/{v}/", {}), ("GET", f"/accounts/reset/MQ/{v}/x/", {})],
    ),
]


async def _socket(url: str, headers: dict[str, str]) -> None:
    try:
        async with connect(url, additional_headers=headers, open_timeout=5) as ws:  # type: ignore[arg-type]
            await asyncio.wait_for(ws.recv(), 5)
    except Exception:  # refused or closed: only the log matters here
        pass


def settled_log(stack: Stack, server: str, start: int, complete: Callable[[str], bool]) -> str:
    """Return what the server logged since ``start``, once its access lines are all there."""
    deadline = time.monotonic() + 5
    while True:
        written = stack.servers[server].log()[start:]
        if complete(written):
            return written
        assert time.monotonic() < deadline, f"the access-log lines are missing:\n{written}"
        time.sleep(0.05)


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.name)
def test_no_secret_in_the_logs(stack: Stack, server: str, secret: Secret) -> None:
    state = stack.current()
    value = secret.value(state)
    before = len(stack.servers[server].log())
    with stack.http(server) as http:
        for method, path, headers in secret.requests(state, value):
            http.request(method, path, headers=headers)
    stack.changed()  # a revoked token or a used link: the next case gets a fresh world
    sent = len(secret.requests(state, value))
    written = settled_log(
        stack, server, before, lambda text: text.count('"GET ') + text.count('"DELETE ') >= sent
    )
    assert value not in written, f"{secret.name} appears in the {server} log:\n{written}"


@pytest.mark.parametrize("server", SERVERS)
def test_no_share_token_in_the_logs_of_a_socket(stack: Stack, server: str) -> None:
    state = stack.current()
    token = state.world.link.raw_token
    before = len(stack.servers[server].log())
    base = stack.servers[server].ws_url + f"/ws/sessions/{state.world.session.pk}/"
    asyncio.run(_socket(f"{base}?link={token}", {}))
    asyncio.run(_socket(base, {"X-Share-Token": token}))
    asyncio.run(_socket(f"{stack.servers[server].ws_url}/ws/nothing/?link={token}", {}))
    written = settled_log(stack, server, before, lambda text: text.count('"WS ') >= 3)
    assert token not in written, f"the link token appears in the {server} log:\n{written}"
