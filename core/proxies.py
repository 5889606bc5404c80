"""Which address a request comes from: the peer, or what trusted proxies say in ``X-Forwarded-For``.

``PIWEB_TRUSTED_PROXIES`` is empty (trust no proxy: forwarded headers are ignored), a count ``N`` (the
last N hops are our proxies, so the client is the N-th address from the right of ``X-Forwarded-For``),
or comma-separated addresses and CIDR blocks (walk ``X-Forwarded-For`` from the right while the hop is a
trusted proxy; the first untrusted address is the client). Throttles and the access log both read the
address from here, so a client can never choose the address it is counted under.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "ClientAddressMiddleware",
    "TrustedProxies",
    "client_address",
    "parse_trusted_proxies",
    "scope_client",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """The proxies in front of the server: a number of hops, or their networks (both empty: none)."""

    count: int = 0
    networks: tuple[Network, ...] = ()

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip())
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def resolve(self, peer: str | None, forwarded_for: str | None) -> str:
        """Return the client address given the TCP peer and the ``X-Forwarded-For`` header it sent."""
        peer = peer or ""
        hops = [hop.strip() for hop in (forwarded_for or "").split(",") if hop.strip()]
        if self.count:
            # DRF's rule for NUM_PROXIES: the N-th from the right, or the first when there are fewer.
            return hops[-min(self.count, len(hops))] if hops else peer
        if not self.networks or not self.trusts(peer):
            return peer
        client = peer
        for hop in reversed(hops):
            client = hop
            if not self.trusts(hop):
                break
        return client


def parse_trusted_proxies(value: str) -> TrustedProxies:
    """Read ``PIWEB_TRUSTED_PROXIES``; a bad value stops the server with the value it could not read."""
    text = value.strip()
    if not text or text == "0":
        return TrustedProxies()
    if text.isdigit():
        return TrustedProxies(count=int(text))
    networks: list[Network] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"PIWEB_TRUSTED_PROXIES: {part!r} is neither a count nor an address or CIDR block."
            ) from exc
    return TrustedProxies(networks=tuple(networks))


@functools.lru_cache(maxsize=8)
def _parsed(value: str) -> TrustedProxies:
    return parse_trusted_proxies(value)


def _trusted() -> TrustedProxies:
    from django.conf import settings

    return _parsed(str(settings.PIWEB_TRUSTED_PROXIES))


def client_address(peer: str | None, forwarded_for: str | None) -> str:
    """Return the client address under the configured trusted proxies."""
    return _trusted().resolve(peer, forwarded_for)


def scope_client(scope: Any) -> str:
    """Return the client address of an ASGI scope (the access log's and sockets' view of it)."""
    client = scope.get("client") or ("", 0)
    forwarded = None
    for name, value in scope.get("headers", []):
        if name == b"x-forwarded-for":
            forwarded = (
                value.decode("latin-1") if forwarded is None else f"{forwarded},{value.decode('latin-1')}"
            )
    return client_address(str(client[0] or ""), forwarded)


class ClientAddressMiddleware:
    """Set ``REMOTE_ADDR`` to the client address, so everything downstream (DRF's throttles, the
    sign-in throttle) counts the client, never an address it forged."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        meta = request.META
        meta["REMOTE_ADDR"] = client_address(meta.get("REMOTE_ADDR"), meta.get("HTTP_X_FORWARDED_FOR"))
        return self.get_response(request)
