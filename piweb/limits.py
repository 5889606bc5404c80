"""Limits applied before a request reaches a view: body size, and query or path values that could not
reach the database intact.

Two layers with one rule. ``BodyLimitASGI`` wraps the ASGI application and refuses an oversized body
from its ``Content-Length`` (or, when there is none, as soon as the bytes received pass the limit)
before Django reads it, so an anonymous 200 MB body costs nothing. ``RequestLimitsMiddleware`` applies
the same limit under WSGI and checks the query string and path.

Only views that declare ``accepts_large_body = True`` (the import endpoint, which spools the upload
to disk) get the import limit; every other request is capped at ``PIWEB_MAX_BODY_BYTES``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

from pitree.storable import Unstorable, check_param

__all__ = ["BodyLimitASGI", "RequestLimitsMiddleware", "body_limit_for"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def body_limit_for(path: str) -> int:
    """Return the largest body the view at ``path`` accepts."""
    try:
        match = resolve(path)
    except Resolver404:
        return int(settings.PIWEB_MAX_BODY_BYTES)
    view_class = getattr(match.func, "cls", None) or getattr(match.func, "view_class", None)
    if getattr(view_class, "accepts_large_body", False):
        # Multipart framing adds a little to the file itself.
        return int(settings.PIWEB_MAX_IMPORT_BYTES) + 64 * 1024
    return int(settings.PIWEB_MAX_BODY_BYTES)


def too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes."


def _error(path: str, message: str, status: int) -> HttpResponse:
    if path.startswith("/api/"):
        return JsonResponse({"error": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _bad_value(request: HttpRequest) -> str | None:
    """Return why the path or a query value cannot be used, or None."""
    try:
        check_param(request.path, "the path")
        for key, values in request.GET.lists():
            check_param(key, "a query parameter name")
            for value in values:
                check_param(value, f"the query parameter {key!r}")
    except Unstorable as exc:
        return str(exc)
    return None


class RequestLimitsMiddleware:
    """Refuse oversized bodies (413) and unusable path or query values (400) before any view runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = _bad_value(request)
        if problem is not None:
            return _error(request.path, problem, 400)
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit():
            limit = body_limit_for(request.path_info)
            if int(declared) > limit:
                return _error(request.path, too_large_message(limit), 413)
        return self.get_response(request)


class BodyLimitASGI:
    """Refuse an oversized HTTP body before the wrapped ASGI application reads it."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit_for(scope.get("path", "/"))
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _respond(send, scope, too_large_message(limit), 413)
            return
        received = 0
        exceeded = False

        async def counted() -> Message:
            nonlocal received, exceeded
            if exceeded:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # The application sees a client that went away and answers nothing; we answer.
                    exceeded = True
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, counted, send)
        if exceeded:
            await _respond(send, scope, too_large_message(limit), 413)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _respond(send: Send, scope: Scope, message: str, status: int) -> None:
    path = scope.get("path", "/")
    if path.startswith("/api/"):
        body, kind = json.dumps({"error": message}).encode(), b"application/json"
    else:
        body, kind = message.encode(), b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
