"""Authorization over the wire: every route of ``tests/authz``'s matrix × the six kinds of caller, and
the session socket, against the real daphne.

The expected statuses are the matrix's own (``tests/authz/test_matrix.py``); here they are sent as a
client sends them: API calls with an API token, pages with a session cookie, link holders with
``X-Share-Token``, sockets through a websocket client.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.authz.conftest import ACTORS
from tests.authz.test_matrix import Row, body_for

from .conftest import Current, Stack
from .routes import ROWS, SOCKET

# Writes after which the next caller would find different rights or state (besides every DELETE); the
# others (renames, forks, labels, appends, new sessions, teams, links) leave every row's answer as it was.
CHANGES_ACCESS = {
    ("api/teams/", "POST"),  # a team name is taken once
    ("api/teams/<int:team_id>/members/<str:username>/", "PATCH"),
    ("api/operations/<uuid:operation_id>/cancel/", "POST"),
    ("api/runs/<uuid:run_id>/abort/", "POST"),
    ("api/sessions/<int:pk>/runs/stop/", "POST"),  # the active run is gone
    ("api/teams/<int:team_id>/tags/", "POST"),  # a tag name is taken once per team
    ("api/saved-filters/", "POST"),
    ("api/sessions/<int:pk>/reviews/", "POST"),  # a review is open now
    ("api/reviews/<int:review_id>/decision/", "POST"),
    ("api/reviews/<int:review_id>/withdraw/", "POST"),
    ("api/reviews/<int:review_id>/request/", "POST"),
    ("api/sessions/<int:pk>/archive/", "POST"),  # archived sessions leave the default list
    ("api/sessions/bulk/", "POST"),
}


def headers_for(state: Current, actor: str, path: str) -> dict[str, str]:
    assert state.world is not None
    if actor in state.tokens:
        if path.startswith("/api/"):
            return {"Authorization": f"Token {state.tokens[actor]}"}
        return {"Cookie": state.cookies[actor]}
    if actor == "link":
        return {"X-Share-Token": state.world.link.raw_token}
    return {}


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.method} {r.route or '/'}")
def test_route(stack: Stack, row: Row, actor: str) -> None:
    state = stack.current()
    assert state.world is not None
    with stack.db():  # some rows make what they act on (a tag, a review) as they build their path
        path = row.path(state.world)
        body = body_for(row, state.world)
    kwargs: dict[str, Any] = {"headers": headers_for(state, actor, path)}
    if body is not None:
        if row.fmt == "ndjson":
            kwargs["content"] = body
            kwargs["headers"]["Content-Type"] = "application/x-ndjson"
        else:
            kwargs["json"] = body
    with stack.http() as http:
        response = http.request(row.method, path, **kwargs)
    if response.status_code < 300 and (row.method == "DELETE" or (row.route, row.method) in CHANGES_ACCESS):
        stack.changed()  # it took something away: the next case gets a fresh world
    assert response.status_code == row.outcome(actor), (
        f"{row.method} {path} as {actor}: {response.status_code} {response.text[:200]}"
    )


async def socket_outcome(stack: Stack, state: Current, actor: str) -> int:
    assert state.world is not None
    headers: dict[str, str] = {}
    origin = None
    if actor in state.cookies:
        headers["Cookie"] = state.cookies[actor]
        origin = stack.web.base_url
    elif actor == "link":
        headers["X-Share-Token"] = state.world.link.raw_token
    url = f"{stack.web.ws_url}/ws/sessions/{state.world.session.pk}/"
    try:
        socket = await connect(url, origin=origin, additional_headers=headers, open_timeout=10)  # type: ignore[arg-type]
    except InvalidStatus as refused:
        return int(refused.response.status_code)
    async with socket:
        try:
            async with asyncio.timeout(5):
                message = await socket.recv()
        except Exception:
            return int(socket.close_code or -1)
        return 1000 if '"state"' in str(message) else -1


@pytest.mark.parametrize("actor", ACTORS)
def test_socket(stack: Stack, actor: str) -> None:
    state = stack.current()
    expected = int(SOCKET.split()[ACTORS.index(actor)])
    # A socket refused before it is accepted is a 403 handshake answer on the wire, whatever the code.
    assert asyncio.run(socket_outcome(stack, state, actor)) == (403 if expected >= 4000 else expected)


async def runner_socket_outcome(stack: Stack, headers: dict[str, str], origin: str | None = None) -> str:
    """Open the runners' socket with these headers: "welcome" when it let the caller in, else the refusal."""
    try:
        socket = await connect(
            f"{stack.web.ws_url}/ws/runner/",
            origin=origin,  # type: ignore[arg-type]
            additional_headers=headers,
            open_timeout=10,
        )
    except InvalidStatus as refused:
        return str(refused.response.status_code)
    async with socket:
        try:
            async with asyncio.timeout(5):
                message = await socket.recv()
        except Exception:
            return str(socket.close_code)
        return "welcome" if '"welcome"' in str(message) else str(message)[:80]


@pytest.mark.parametrize("actor", ACTORS)
def test_runner_socket(stack: Stack, actor: str) -> None:
    """No person's credentials open the runners' socket, however they are sent: only a runner's token."""
    state = stack.current()
    assert state.world is not None
    tries: list[tuple[dict[str, str], str | None]] = []
    if actor in state.tokens:
        token = state.tokens[actor]
        tries += [({"Authorization": f"Token {token}"}, None), ({"Authorization": f"Runner {token}"}, None)]
        tries.append(({"Cookie": state.cookies[actor]}, stack.web.base_url))
    elif actor == "link":
        raw = state.world.link.raw_token
        tries += [({"X-Share-Token": raw}, None), ({"Authorization": f"Runner {raw}"}, None)]
    else:
        tries.append(({}, None))
    for headers, origin in tries:
        assert asyncio.run(runner_socket_outcome(stack, headers, origin)) == "403", (actor, headers)


def test_runner_socket_lets_a_runner_in_until_its_token_is_revoked(stack: Stack) -> None:
    from runners import services as runner_services

    state = stack.current()
    assert state.world is not None
    owner = state.world.user_of("owner")
    with stack.db():
        runner, token = runner_services.create_runner(actor=owner, name="sweep")
    headers = {"Authorization": f"Runner {token}"}
    assert asyncio.run(runner_socket_outcome(stack, headers)) == "welcome"
    with stack.db():
        runner_services.revoke_runner(actor=owner, runner=runner)
    assert asyncio.run(runner_socket_outcome(stack, headers)) == "403"
