"""What every WebSocket passes before a consumer sees it: the Origin check and the credentials.

- A browser always sends ``Origin``; it must be this server's own origin (scheme, host and port, as the
  request's ``Host`` names it, for a host in ``ALLOWED_HOSTS``) or one of ``CSRF_TRUSTED_ORIGINS``.
- A connection without ``Origin`` is not a browser: its cookies are ignored (a cookie proves nothing
  when no browser vouches for where the page came from), so it must bring an API token.
- API tokens travel in ``Authorization: Token <key>`` or, for browsers, which cannot set headers, in the
  subprotocol ``piweb.token.<key>``; never in the URL, where proxies and logs would keep them. Share-link
  tokens may also come as ``X-Share-Token`` or the subprotocol ``piweb.link.<token>``.
The token is checked by the REST framework's configured authentication classes, so sockets and the API
accept exactly the same tokens. The scope keeps which token it was (``api_token``: its stored digest),
so the consumer can tell when that token is revoked or expires.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from asgiref.sync import ThreadSensitiveContext
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.http.request import split_domain_port, validate_host
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import APIException
from rest_framework.settings import api_settings

SUBPROTOCOL = "piweb"
TOKEN_PROTOCOL = "piweb.token."
LINK_PROTOCOL = "piweb.link."

__all__ = [
    "LINK_PROTOCOL",
    "SUBPROTOCOL",
    "TOKEN_PROTOCOL",
    "SyncThreadPerSocket",
    "allowed_origin",
    "websocket_stack",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_key(url: str) -> tuple[str, str, int] | None:
    """Return (scheme, host, port) of an origin, the port filled in from the scheme; None if malformed."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _secure(scope: dict[str, Any]) -> bool:
    if scope.get("scheme") == "wss":
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name = proxy[0].removeprefix("HTTP_").lower().replace("_", "-").encode()
        return (_header(scope, name) or "").split(",")[0].strip() == proxy[1]
    return False


def allowed_origin(scope: dict[str, Any], origin: str) -> bool:
    """Return whether a browser on ``origin`` may open this socket (scheme, host and port all count)."""
    key = _origin_key(origin)
    if key is None:
        return False
    trusted = {_origin_key(o) for o in getattr(settings, "CSRF_TRUSTED_ORIGINS", [])}
    if key in trusted:
        return True
    host = _header(scope, b"host")
    if not host:
        return False
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    own = _origin_key(("https" if _secure(scope) else "http") + "://" + host)
    return own is not None and key == own


def _offered(scope: dict[str, Any], prefix: str) -> str | None:
    for protocol in scope.get("subprotocols") or []:
        if protocol.startswith(prefix) and len(protocol) > len(prefix):
            return str(protocol[len(prefix) :])
    return None


def _authenticate_token(authorization: str) -> tuple[Any, Any]:
    """Return the user an ``Authorization`` header stands for and its token, through the API's own
    token classes; (None, None) when it stands for nobody."""
    request = HttpRequest()
    request.META["HTTP_AUTHORIZATION"] = authorization
    # The setting holds the classes themselves once DRF has imported them; the stubs say strings.
    classes = cast("list[type[BaseAuthentication]]", api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    for auth_class in classes:
        if issubclass(auth_class, SessionAuthentication):
            continue
        try:
            found = auth_class().authenticate(request)  # type: ignore[arg-type]  # token classes read META only
        except APIException:
            return None, None
        if found is not None:
            return found[0], found[1]
    return None, None


class CredentialsMiddleware:
    """Check the Origin, then put the user of a token (or of a browser's cookie) into the scope."""

    def __init__(self, inner: Any) -> None:
        self.cookie_app = AuthMiddlewareStack(inner)
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("CredentialsMiddleware only serves websockets")
        origin = _header(scope, b"origin")
        if origin is not None and not allowed_origin(scope, origin):
            return await WebsocketDenier()(scope, receive, send)
        scope = dict(scope)
        link = _offered(scope, LINK_PROTOCOL) or _header(scope, b"x-share-token")
        if link:
            scope["share_token"] = link
        token = _offered(scope, TOKEN_PROTOCOL)
        authorization = f"Token {token}" if token else _header(scope, b"authorization")
        if authorization:
            user, token = await database_sync_to_async(_authenticate_token)(authorization)
            scope["user"] = user or AnonymousUser()
            scope["token_auth"] = True
            scope["api_token"] = getattr(token, "digest", None) if user is not None else None
            return await self.inner(scope, receive, send)
        if origin is None:
            # No browser, no token: cookies alone are not enough.
            scope["user"] = AnonymousUser()
            return await self.inner(scope, receive, send)
        return await self.cookie_app(scope, receive, send)


class SyncThreadPerSocket:
    """Run each socket's synchronous work (its database reads) on a thread of its own, as Django runs
    each HTTP request.

    Outside such a context asgiref sends every thread-sensitive call of the process to one shared thread:
    100 sockets connecting at once then queued their token and access checks one after another, past
    daphne's 5 s handshake timeout, and each event's checks waited behind every other socket's. The
    thread holds no database connection between calls: each call hands its connection back to the pool.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        async with ThreadSensitiveContext():
            return await self.inner(scope, receive, send)


def websocket_stack(inner: Any) -> Any:
    """Wrap the websocket router with the Origin check and authentication, each socket on its own thread."""
    return SyncThreadPerSocket(CredentialsMiddleware(inner))
