"""A request that fails because the database is away answers 503 with ``Retry-After``, never a 500.

PostgreSQL restarting, a pool with no connection to lend within ``PIWEB_DB_POOL_TIMEOUT``, a connection
that died under a query: each raises ``OperationalError`` or ``InterfaceError`` wherever the request
was, in a view or in a middleware before it (the session, the user). Django turns any of them into its
500 page (HTML, even under /api/), which clients do not retry. Here the error is recognised where Django
reports it (``got_request_exception``, sent with the exception at hand wherever the request failed), and
the outermost middleware answers 503 instead: the API's JSON error under /api/, plain text elsewhere.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import psycopg
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

__all__ = ["RETRY_AFTER_SECONDS", "DatabaseOutageMiddleware", "is_database_outage"]

RETRY_AFTER_SECONDS = 5
MESSAGE = "The database is not answering. Try again in a few seconds."
_OUTAGE = "_piweb_database_outage"
_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def is_database_outage(exc: BaseException | None) -> bool:
    """Return whether ``exc``, or what caused it, says the database could not be reached or answer."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, _ERRORS):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _mark(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is not None and is_database_outage(sys.exc_info()[1]):
        setattr(request, _OUTAGE, True)


got_request_exception.connect(_mark, dispatch_uid="piweb.outages")


class DatabaseOutageMiddleware:
    """Outermost: turns the 500 of a request that met a database outage into 503 with ``Retry-After``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 500 or not getattr(request, _OUTAGE, False):
            return response
        if request.path.startswith("/api/"):
            answer: HttpResponse = JsonResponse(
                {"error": MESSAGE, "retryAfter": RETRY_AFTER_SECONDS}, status=503
            )
        else:
            answer = HttpResponse(MESSAGE, status=503, content_type="text/plain; charset=utf-8")
        answer["Retry-After"] = str(RETRY_AFTER_SECONDS)
        answer["Cache-Control"] = "no-store"
        return answer
