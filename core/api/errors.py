"""One error shape for the whole API: ``{"error": <message>, "detail": <what DRF or the service said>}``.

Refusals are mapped here, so views can call a use case and let its refusal become the right status.
This module maps the refusals every app shares (access, sharing input, a team's last owner, an oversized
body); each app registers its own once (``register_error``), e.g. a moved leaf 409 or a passed quota 413.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from core.errors import (
    AccessDenied,
    Forbidden,
    InvalidSharing,
    NotSignedIn,
    NotVisible,
    TeamConflict,
    TooFrequent,
)

__all__ = ["ACCESS_ERRORS", "PayloadTooLarge", "api_exception_handler", "error_response", "register_error"]

# What each app registered: the exception type, its status, and the extra fields of its body.
_REGISTERED: list[
    tuple[type[Exception], int, Callable[[Any], dict[str, Any]] | None, Callable[[Any], str]]
] = []


def register_error(
    kind: type[Exception],
    status_code: int,
    *,
    message: Callable[[Any], str] = str,
    extra: Callable[[Any], dict[str, Any]] | None = None,
) -> None:
    """Answer ``kind`` (and its subclasses) with ``status_code`` and the API's error body."""
    _REGISTERED.append((kind, status_code, extra, message))


# The one mapping of access refusals to HTTP answers: 401 (403 for session-cookie clients, as DRF does),
# 404 and 403. The socket's close codes for the same refusals are in consumers.py.
ACCESS_ERRORS: dict[type[AccessDenied], type[exceptions.APIException]] = {
    NotSignedIn: exceptions.NotAuthenticated,
    NotVisible: exceptions.NotFound,
    Forbidden: exceptions.PermissionDenied,
}


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def error_response(message: str, status_code: int, **extra: Any) -> Response:
    """Return the API's error body with ``status_code``."""
    return Response({"error": message, **extra}, status=status_code)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn any exception a view raises into the API's error body; unknown exceptions stay 500s."""
    response = _handle(exc, context)
    if response is not None:
        # Messages may quote what the client sent, lone surrogates included, which no encoder accepts.
        response.data = _printable(response.data)
    return response


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def _handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, AccessDenied):
        exc = _api_exception(exc, context)
    if isinstance(exc, InvalidSharing):
        exc = exceptions.ValidationError({exc.field: [exc.message]})
    if isinstance(exc, TeamConflict):
        return error_response(str(exc), status.HTTP_409_CONFLICT)
    if isinstance(exc, TooFrequent):
        answer = error_response(exc.message, status.HTTP_429_TOO_MANY_REQUESTS, retryAfter=exc.retry_after)
        answer["Retry-After"] = str(exc.retry_after)
        return answer
    for kind, status_code, extra, message in _REGISTERED:
        if isinstance(exc, kind):
            return error_response(message(exc), status_code, **(extra(exc) if extra else {}))
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(str(exc) or PayloadTooLarge.default_detail)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    # Imported here: rest_framework.views loads the default parsers, which import this module.
    from rest_framework.views import exception_handler

    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    response.data = {"error": _message(exc, detail), "detail": detail}
    return response


def _api_exception(exc: AccessDenied, context: dict[str, Any]) -> exceptions.APIException:
    """Return DRF's exception for an access refusal, with the challenge DRF adds to its own 401s."""
    mapped = ACCESS_ERRORS.get(type(exc), exceptions.PermissionDenied)(exc.message)
    if isinstance(mapped, exceptions.NotAuthenticated):
        view, request = context.get("view"), context.get("request")
        header = view.get_authenticate_header(request) if view is not None and request is not None else None
        if header:
            mapped.auth_header = header  # type: ignore[attr-defined]
        else:
            mapped.status_code = status.HTTP_403_FORBIDDEN  # no challenge to offer: DRF answers 403 too
    return mapped


def _message(exc: Exception, detail: Any) -> str:
    if isinstance(exc, exceptions.ParseError):
        return f"Malformed request body: {_first_text(detail)}"
    if isinstance(exc, exceptions.ValidationError):
        return f"Invalid input: {_first_text(detail)}"
    return _first_text(detail)


def _first_text(detail: Any) -> str:
    """Return the first message in DRF's nested error detail, prefixed by the field path."""
    prefix: list[str] = []
    while True:
        if isinstance(detail, dict):
            if not detail:
                break
            key, detail = next(iter(detail.items()))
            if key not in ("detail", "non_field_errors"):
                prefix.append(str(key))
        elif isinstance(detail, list):
            if not detail:
                break
            detail = detail[0]
        else:
            break
    text = str(detail) if detail not in ({}, []) else "error"
    return f"{'.'.join(prefix)}: {text}" if prefix else text
