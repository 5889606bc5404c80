"""Request body parsers that refuse oversized bodies with 413, bound nesting, and never hold a session
file in memory."""

from __future__ import annotations

import json
import tempfile
from typing import IO, Any

import orjson
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, DataAndFiles

from core.api.errors import PayloadTooLarge

__all__ = ["LimitedJSONParser", "NdjsonParser", "max_body_bytes", "max_import_bytes"]

CHUNK = 1024 * 1024


def max_body_bytes() -> int:
    """Return the largest request body accepted anywhere but the import endpoint."""
    return int(settings.PIWEB_MAX_BODY_BYTES)


def max_import_bytes() -> int:
    """Return the largest session file an import accepts."""
    return int(settings.PIWEB_MAX_IMPORT_BYTES)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_body(data: bytes) -> Any:
    """Decode a JSON request body without unbounded recursion.

    orjson refuses nesting deeper than 1024 levels without recursing, and NaN/Infinity. It also refuses
    lone surrogates, which JSON allows and Pi writes (``JSON.stringify`` escapes them): only those
    bodies are decoded again by the standard library, whose depth is bounded by the interpreter's
    recursion limit, so whether such a string can be stored is decided by the use case, as for an import.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise ParseError(f"the body is not valid JSON ({exc})") from exc
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise ParseError(f"the body is not UTF-8 ({exc.reason})") from exc
    except RecursionError as exc:
        raise ParseError("the body is not valid JSON (nested too deeply)") from exc
    except ValueError as exc:
        raise ParseError(f"the body is not valid JSON ({exc})") from exc


class LimitedJSONParser(BaseParser):
    """Parse a JSON body of at most ``PIWEB_MAX_BODY_BYTES``."""

    media_type = "application/json"

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        limit = max_body_bytes()
        if stream is None:
            return {}
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        return parse_json_body(data)


class NdjsonParser(BaseParser):
    """Spool a raw session file body to a temporary file; it becomes ``request.FILES["file"]``."""

    media_type = "application/x-ndjson"

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        limit = max_import_bytes()
        spooled: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=4 * CHUNK)  # noqa: SIM115 (the view closes it)
        size = 0
        while stream is not None:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                spooled.close()
                raise PayloadTooLarge(f"The session file is larger than {limit} bytes.")
            spooled.write(chunk)
        spooled.seek(0)
        return DataAndFiles({}, {"file": spooled})


class JsonlParser(NdjsonParser):
    media_type = "application/jsonl"
