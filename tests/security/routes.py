"""Every HTTP route and websocket route of the project, read from the URLconf, and how to fill them in.

Each category of the suite builds its cases from these lists, so a new route gets cases the day it is
added; a route a category cannot build a case for (an unknown path parameter, no working body, no
expected status) fails ``test_coverage``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

from piweb.routing import websocket_routes
from tests.authz.conftest import World
from tests.authz.test_matrix import PUBLIC, ROWS, SOCKET, STAFF_PREFIXES
from tests.fuzz.test_hostile_requests import TEMPLATES, methods

__all__ = [
    "PUBLIC",
    "ROWS",
    "SOCKET",
    "STAFF_PREFIXES",
    "TEMPLATES",
    "fill",
    "http_routes",
    "params",
    "socket_routes",
    "unsafe_routes",
]


def http_routes() -> list[tuple[str, list[str]]]:
    """Return (route, methods) for every URL pattern outside the admin, without recursion."""
    found: list[tuple[str, list[str]]] = []
    stack: list[tuple[Any, str]] = [(p, "") for p in reversed(get_resolver().url_patterns)]
    while stack:
        pattern, prefix = stack.pop()
        if isinstance(pattern, URLResolver):
            stack.extend((child, prefix + str(pattern.pattern)) for child in reversed(pattern.url_patterns))
        elif isinstance(pattern, URLPattern):
            route = prefix + str(pattern.pattern)
            if route.startswith(STAFF_PREFIXES) or any(route == seen for seen, _ in found):
                continue  # the admin has its own tests; a shadowed duplicate is never reached
            view = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
            found.append((route, [m.upper() for m in methods(view)]))
    return found


def unsafe_routes() -> list[tuple[str, str]]:
    return sorted((route, m) for route, ms in http_routes() for m in ms if m != "GET")


def socket_routes() -> list[str]:
    """Every websocket route but the catch-all that refuses unknown paths."""
    return [str(p.pattern) for p in websocket_routes() if str(p.pattern) not in ("", "^")]


def params(route: str) -> list[str]:
    return [m.split(":")[-1] for m in re.findall(r"<([^>]+)>", route)]


def ids_of(world: World) -> dict[str, str]:
    """A value for every path parameter the project's routes use (an unknown one fails the suite)."""
    return {
        "pk": str(world.session.pk),
        "entry_id": "u2",
        "team_id": str(world.team.pk),
        "username": "viewer",
        "link_id": str(world.link.pk),
        "token": world.link.raw_token,
        "token_id": "000000000000000",
        "invitation_id": "999999",
        "operation_id": str(world.operation.operation_id),
        "run_id": str(world.run.public_id),
        "uidb64": "MQ",
        "provider_id": "sso",
        "comment_id": str(world.comment.pk),
        "runner_id": "0",
        "review_id": "999999",
        "tag_id": "999999",
        "filter_id": "999999",
        "hook_id": "999999",
        "delivery_id": "999999",
    }


KNOWN_PARAMS = {"pk", "entry_id", "team_id", "username", "link_id", "token", "token_id", "invitation_id"}
KNOWN_PARAMS |= {"operation_id", "run_id", "uidb64", "provider_id", "comment_id", "runner_id"}
KNOWN_PARAMS |= {"review_id", "tag_id", "filter_id", "hook_id", "delivery_id"}


def fill(route: str, ids: dict[str, str], replace: tuple[str, str] | None = None) -> str:
    """Return the URL of ``route`` with the world's ids (one parameter replaced, when asked)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[-1]
        if replace and replace[0] == name:
            return replace[1]
        return ids[name]

    return "/" + re.sub(r"<([^>]+)>", value, route)


def all_params() -> Iterator[tuple[str, str]]:
    for route, _ in http_routes():
        for name in params(route):
            yield route, name
    for route in socket_routes():
        for name in params(route):
            yield route, name
