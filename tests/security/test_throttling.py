"""The sign-in throttle counts the real client: forged forwarding headers change nothing.

Against the real servers (no trusted proxy configured), a client spraying one password over many
usernames, each request claiming another address in every header a proxy might set, is refused once
it passes the per-client limit. In process, ``PIWEB_TRUSTED_PROXIES`` (a count or CIDR blocks) decides
when ``X-Forwarded-For`` is believed.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from core.proxies import TrustedProxies, parse_trusted_proxies, scope_client

from .conftest import SERVERS, SIGNIN_RATE, Stack
from .routes import http_routes

SIGNIN_ROUTES = ["accounts/login/", "api/token/"]
COUNTER = itertools.count(1)


def forged(kind: str) -> dict[str, str]:
    """Headers claiming a new address on every call: X-Forwarded-For alone, or every header at once."""
    n = next(COUNTER)
    address = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
    if kind == "X-Forwarded-For":
        return {"X-Forwarded-For": f"{address}, 192.0.2.{n % 256}"}
    return {
        "X-Forwarded-For": address,
        "X-Real-IP": address,
        "Forwarded": f"for={address}",
        "Client-IP": address,
        "True-Client-IP": address,
        "CF-Connecting-IP": address,
        "X-Cluster-Client-IP": address,
    }


HEADERS = ["X-Forwarded-For", "every forwarding header"]


def test_the_signin_routes_exist() -> None:
    routes = {route for route, _ in http_routes()}
    assert set(SIGNIN_ROUTES) <= routes


def attempt(http: Any, route: str, username: str, headers: dict[str, str]) -> int:
    if route == "api/token/":
        return int(
            http.post(
                "/api/token/", json={"username": username, "password": "x"}, headers=headers
            ).status_code
        )
    http.get("/accounts/login/")
    token = http.cookies.get("csrftoken", "")
    form = {"username": username, "password": "x", "csrfmiddlewaretoken": token}
    return int(http.post("/accounts/login/", data=form, headers=headers).status_code)


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("header", HEADERS)
@pytest.mark.parametrize("route", SIGNIN_ROUTES)
def test_forged_forwarding_headers_do_not_escape_the_signin_throttle(
    stack: Stack, server: str, header: str, route: str
) -> None:
    stack.forget_throttles()
    with stack.http(server) as http:
        statuses = [
            attempt(http, route, f"sprayed{next(COUNTER)}", forged(header)) for _ in range(SIGNIN_RATE + 1)
        ]
    stack.forget_throttles()
    assert 429 not in statuses[:SIGNIN_RATE], statuses
    assert statuses[-1] == 429, f"{header} let attempt {SIGNIN_RATE + 1} through: {statuses}"


# -- PIWEB_TRUSTED_PROXIES, in process -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "peer", "forwarded", "client"),
    [
        ("", "198.51.100.7", "10.0.0.1", "198.51.100.7"),
        ("", "127.0.0.1", "10.0.0.1", "127.0.0.1"),
        ("1", "127.0.0.1", "10.0.0.1", "10.0.0.1"),
        ("1", "127.0.0.1", "6.6.6.6, 10.0.0.1", "10.0.0.1"),
        ("2", "127.0.0.1", "6.6.6.6, 10.0.0.1, 172.16.0.2", "10.0.0.1"),
        ("1", "127.0.0.1", None, "127.0.0.1"),
        ("127.0.0.1/32, 10.0.0.0/8", "127.0.0.1", "6.6.6.6, 203.0.113.9, 10.1.2.3", "203.0.113.9"),
        ("10.0.0.0/8", "198.51.100.7", "203.0.113.9", "198.51.100.7"),
        ("10.0.0.0/8,::1", "::1", "2001:db8::5", "2001:db8::5"),
    ],
)
def test_trusted_proxies_decide_the_client(
    setting: str, peer: str, forwarded: str | None, client: str
) -> None:
    assert parse_trusted_proxies(setting).resolve(peer, forwarded) == client
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    with override_settings(PIWEB_TRUSTED_PROXIES=setting):
        assert scope_client({"client": (peer, 5000), "headers": headers}) == client


def test_a_bad_trusted_proxies_value_is_refused() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="not-an-address"):
        parse_trusted_proxies("10.0.0.0/8, not-an-address")
    assert parse_trusted_proxies("0") == TrustedProxies()


@pytest.mark.django_db
@override_settings(PIWEB_LOGIN_RATE_PER_CLIENT="2/min", PIWEB_LOGIN_RATE_PER_USERNAME="100/min")
def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_count() -> None:
    def post(forwarded: str) -> int:
        client = APIClient(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=forwarded)
        return int(client.post("/api/token/", {"username": f"u{next(COUNTER)}", "password": "x"}).status_code)

    with override_settings(PIWEB_TRUSTED_PROXIES="10.0.0.0/8"):
        assert [post("203.0.113.1") for _ in range(3)] == [400, 400, 429]
        assert post("203.0.113.2") == 400  # another client behind the same proxy
    with override_settings(PIWEB_TRUSTED_PROXIES=""):
        # No trusted proxy: every request counts against the proxy's own address, whatever it forwards.
        assert [post(f"203.0.113.{n}") for n in (3, 4, 5)] == [400, 400, 429]
