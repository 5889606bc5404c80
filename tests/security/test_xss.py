"""Stored and reflected XSS: what users write and what a URL carries never comes back as markup.

Payloads are written through the API (session name, label, message text, team name), then every GET
route of the URLconf is read as the owner (and the link page as its holder): no HTML answer may carry
a payload unescaped, and no API answer may be served as HTML. Every GET route is also read with the
payload in each query parameter the project reads and in each path parameter.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from .conftest import Current, Stack
from .routes import fill, http_routes, ids_of, params

SCRIPT = "<script>alert(1)</script>"
IMAGE = '"><img src=x onerror=alert(2)>'
MARKERS = ["<script>alert(1)", "<img src=x onerror=alert(2)>"]
GET_ROUTES = sorted(route for route, methods in http_routes() if "GET" in methods)
QUERY_NAMES = ["q", "link", "leaf", "since", "around", "entry", "next", "offset", "limit", "sort", "filename"]


def plant(stack: Stack, state: Current) -> None:
    """Write the payloads where users can write text, as the owner, through the real server."""
    pk = state.world.session.pk
    with stack.http(headers={"Authorization": f"Token {state.tokens['owner']}"}) as http:
        assert http.patch(f"/api/sessions/{pk}/", json={"name": SCRIPT + IMAGE}).status_code == 200
        assert (
            http.post(f"/api/sessions/{pk}/labels/", json={"targetId": "u2", "label": IMAGE}).status_code
            == 201
        )
        message = {"role": "user", "content": SCRIPT + " and " + IMAGE, "timestamp": 5}
        appended = http.post(
            f"/api/sessions/{pk}/append/", json={"entries": [{"type": "message", "message": message}]}
        )
        assert appended.status_code == 201, appended.text
        assert http.post("/api/teams/", json={"name": SCRIPT}).status_code == 201


def check(response_text: str, content_type: str, url: str, api: bool) -> None:
    if api and not url.startswith(("/api/docs/", "/api/redoc/")):
        assert "text/html" not in content_type, f"{url} answers as HTML: {content_type}"
    if "text/html" in content_type:
        for marker in MARKERS:
            assert marker not in response_text, f"{url} carries {marker!r} unescaped"


@pytest.fixture
def planted(stack: Stack) -> Current:
    state = stack.current()
    if not getattr(state, "planted", False):
        plant(stack, state)
        state.planted = True  # type: ignore[attr-defined]
    return state


def headers(state: Current, url: str) -> dict[str, str]:
    if url.startswith("/api/"):
        return {"Authorization": f"Token {state.tokens['owner']}"}
    return {"Cookie": state.cookies["owner"]}


@pytest.mark.parametrize("route", GET_ROUTES)
def test_stored_payloads_come_back_escaped(stack: Stack, planted: Current, route: str) -> None:
    url = fill(route, ids_of(planted.world))
    with stack.http() as http:
        response = http.get(url, headers=headers(planted, url))
        check(response.text, response.headers.get("content-type", ""), url, url.startswith("/api/"))
        if route == "s/<str:token>/":
            anonymous = http.get(url)
            check(anonymous.text, anonymous.headers.get("content-type", ""), url, False)
            assert anonymous.status_code == 200 and "alert(1)" in anonymous.text  # it is there, escaped


@pytest.mark.parametrize("route", GET_ROUTES)
def test_reflected_payloads_come_back_escaped(stack: Stack, planted: Current, route: str) -> None:
    ids = ids_of(planted.world)
    query = "&".join(f"{name}={quote(SCRIPT + IMAGE)}" for name in QUERY_NAMES)
    # (url, whether it reaches an API view): a path parameter that does not match its route is a 404 page.
    urls = [(fill(route, ids) + "?" + query, route.startswith("api/"))]
    urls += [(fill(route, ids, (name, quote(SCRIPT + IMAGE, safe=""))), False) for name in params(route)]
    with stack.http() as http:
        for url, api in urls:
            response = http.get(url, headers=headers(planted, url))
            assert response.status_code < 500, f"{url}: {response.status_code}"
            check(response.text, response.headers.get("content-type", ""), url, api)
