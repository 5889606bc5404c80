"""Request ids and JSON log lines (``PIWEB_LOG_FORMAT=json``).

Every HTTP request and socket gets an id at the edge: the caller's ``X-Request-ID`` when it is a sane
token (a proxy's id carries through), otherwise a new one. It is answered in the ``X-Request-ID``
header and put on every log record written while the request is handled, the access line included;
Django runs sync views in threads that copy the context, so their records carry it too.

The JSON formatter writes one object per line. It runs after the handlers' filters, so the message it
writes is the one the secret-redacting filter (``piweb.log_redaction``) already cleaned; the access
line's fields are redacted where they are made (``piweb.edge``).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

__all__ = ["REQUEST_ID", "JsonFormatter", "RequestIdFilter", "request_id_for"]

REQUEST_ID: ContextVar[str | None] = ContextVar("piweb_request_id", default=None)
_SANE = re.compile(r"[A-Za-z0-9._:-]{8,128}")
# Fields the access log passes along with its line (see piweb.edge.log_access).
ACCESS_FIELDS = ("client", "method", "path", "status", "bytes", "duration_ms")


def request_id_for(headers: list[tuple[bytes, bytes]] | None) -> str:
    """Return the caller's X-Request-ID when it is a plain token, else a new id."""
    for name, value in headers or []:
        if name.lower() == b"x-request-id":
            text = value.decode("latin-1")
            if _SANE.fullmatch(text):
                return text
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Put the current request's id (or None outside a request) on the record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request id, and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or REQUEST_ID.get(),
        }
        for field in ACCESS_FIELDS:
            if hasattr(record, field):
                body[field] = getattr(record, field)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            body["exception"] = record.exc_text
        return json.dumps(body, ensure_ascii=False, default=str)
