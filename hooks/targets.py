"""Where a hook may send: http(s) URLs of public addresses only, unless the server allows private ones.

A hook's URL is checked when it is saved (its form and a literal address) and again before every attempt,
with the name resolved then, so a name later pointed at an address inside the network is refused too.
``PIWEB_HOOKS_ALLOW_PRIVATE`` allows loopback and private addresses (a receiver beside the server, tests).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

__all__ = ["InvalidTarget", "check_address", "check_url"]

MAX_URL_CHARS = 2000


class InvalidTarget(ValueError):
    """A hook's URL is malformed or points where hooks may not send."""


def _private(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def check_url(value: object) -> str:
    """Return the URL if hooks may send to it as written; refuse a malformed one or a private address."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidTarget("url must be an http or https URL.")
    url = value.strip()
    if len(url) > MAX_URL_CHARS:
        raise InvalidTarget(f"url is longer than {MAX_URL_CHARS} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidTarget(f"url is not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidTarget("url must be an http or https URL with a host.")
    if parts.username or parts.password:
        raise InvalidTarget("url must not carry a user name or password.")
    del port
    if settings.PIWEB_HOOKS_ALLOW_PRIVATE:
        return url
    host = parts.hostname.rstrip(".").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        raise InvalidTarget("Hooks may not send to this server's own network.")
    try:
        literal = _private(host)
    except ValueError:
        return url  # a name: checked with the addresses it resolves to, before each attempt
    if literal:
        raise InvalidTarget("Hooks may not send to loopback or private addresses.")
    return url


def check_address(url: str) -> None:
    """Refuse the URL if its host resolves to a loopback or private address (before each attempt)."""
    if settings.PIWEB_HOOKS_ALLOW_PRIVATE:
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        found = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80))
    except OSError as exc:
        raise InvalidTarget(f"{host} does not resolve: {exc}") from exc
    if any(_private(str(info[4][0])) for info in found):
        raise InvalidTarget(f"{host} resolves to a loopback or private address; hooks may not send there.")
