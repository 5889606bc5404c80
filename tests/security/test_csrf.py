"""Cross-site requests: every state-changing route refuses a signed-in browser's request that carries no
CSRF token, and the session socket refuses a page from another origin.

The routes come from the URLconf: a new write route is tried the day it is added.
"""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .conftest import Stack
from .routes import fill, ids_of, unsafe_routes

EVIL = "http://evil.example"
# Routes that take no cookie, each with why a forged request gains nothing.
EXEMPT = {
    ("api/token/", "POST"): "takes a username and password, not the cookie; the token is only in the answer",
}
CASES = [(route, method) for route, method in unsafe_routes() if (route, method) not in EXEMPT]


@pytest.mark.parametrize("origin", [EVIL, None], ids=["foreign origin", "no origin"])
@pytest.mark.parametrize(("route", "method"), CASES, ids=[f"{m} {r}" for r, m in CASES])
def test_a_write_without_a_csrf_token_is_refused(
    stack: Stack, route: str, method: str, origin: str | None
) -> None:
    state = stack.current()
    url = fill(route, ids_of(state.world))
    headers = {"Cookie": state.cookies["owner"], "Content-Type": "application/json"}
    if origin:
        headers["Origin"] = origin
    with stack.http() as http:
        response = http.request(method, url, headers=headers, content=b"{}")
    assert response.status_code == 403, f"{method} {url}: {response.status_code} {response.text[:200]}"
    if url.startswith("/api/"):
        assert "CSRF" in response.text, f"{method} {url} refused for another reason: {response.text[:200]}"


async def _socket_status(stack: Stack, origin: str | None, cookie: str, pk: int) -> int:
    url = f"{stack.web.ws_url}/ws/sessions/{pk}/"
    try:
        async with connect(url, origin=origin, additional_headers={"Cookie": cookie}, open_timeout=10) as ws:  # type: ignore[arg-type]
            await asyncio.wait_for(ws.recv(), 5)
            return 101
    except InvalidStatus as refused:
        return int(refused.response.status_code)


@pytest.mark.parametrize("origin", [EVIL, "http://127.0.0.1.evil.example", "null", None])
def test_the_socket_refuses_a_cookie_from_another_origin(stack: Stack, origin: str | None) -> None:
    state = stack.current()
    status = asyncio.run(_socket_status(stack, origin, state.cookies["owner"], state.world.session.pk))
    assert status == 403


def test_the_socket_accepts_its_own_origin(stack: Stack) -> None:
    state = stack.current()
    status = asyncio.run(
        _socket_status(stack, stack.web.base_url, state.cookies["owner"], state.world.session.pk)
    )
    assert status == 101
