"""Session middleware that API requests authenticated by a token alone skip.

A request to ``/api/`` with an ``Authorization`` header and no session cookie is a script's: DRF's token
class authenticates it from the header, and with no cookie it has no session to load, no session user
for DRF's session class to find and no messages. Building those lazily anyway costs about 0.1 ms of an
API read that should take one, so these subclasses leave them out for such requests; DRF then finds no
session user and sets ``request.user`` from the token. Every other request gets the stock behaviour.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest

__all__ = ["AuthenticationMiddleware", "MessageMiddleware", "SessionMiddleware", "token_only"]

API_PREFIX = "/api/"


def token_only(request: HttpRequest) -> bool:
    """Return whether the request is an API call carrying a token and no session cookie."""
    return (
        request.path_info.startswith(API_PREFIX)
        and "HTTP_AUTHORIZATION" in request.META
        and settings.SESSION_COOKIE_NAME not in request.COOKIES
    )


class SessionMiddleware(DjangoSessionMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        if not token_only(request):
            super().process_request(request)

    # process_response already passes a request without a session through untouched.


class AuthenticationMiddleware(DjangoAuthenticationMiddleware):
    def process_request(self, request: HttpRequest) -> Any:
        if not hasattr(request, "session") and token_only(request):
            return None  # DRF sets request.user from the token
        return super().process_request(request)


class MessageMiddleware(DjangoMessageMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        if not hasattr(request, "session") and token_only(request):
            return
        super().process_request(request)

    # process_response already passes a request without messages through untouched.
