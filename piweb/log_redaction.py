"""Secrets never reach a log line: tokens, keys, query values and what the secret scanner would flag.

A URL can carry a secret anywhere: in a known route's path (``/s/<token>/``, a password-reset link), in
its query (``?link=``, or a search a person typed), or pasted into a path that does not exist. So the
values are masked, whatever the URL's shape:

- a query is kept as its keys only (``/?q&page``): search text and whatever else people type stay out;
- a run of 24 or more letters, digits, ``-`` and ``_`` holding both letters and digits is masked: every
  token piweb issues (share links: 32, API tokens: 64 characters) and most others look like that, and
  none of piweb's own ids do (UUIDs are kept: they name sessions and tasks);
- whatever the secret scanner (``documents.secrets``: detect-secrets' pattern detectors) would flag in a
  line is masked too (provider keys, passwords in URLs, private keys);
- a token quoted after ``Bearer`` or ``Token`` is masked.

``redact`` rewrites any text, ``RedactSecretsFilter`` applies it to every record a handler writes (the
message with its arguments merged in, and any traceback), Django's ``Not Found: …`` warnings included,
and the access log (``piweb.edge``) formats its lines with it.
"""

from __future__ import annotations

import logging
import re

from documents.secrets import secret_spans

__all__ = ["REDACTED", "RedactSecretsFilter", "redact"]

REDACTED = "[redacted]"

# Known routes whose path holds a secret shorter than the generic rule below catches, or mixed with
# words (a reset token is "<base36>-<hex>").
_ROUTES = [
    re.compile(r"(/s/)[^/?#\s\"']+"),
    re.compile(r"(/accounts/reset/)[^/?#\s\"']+/[^/?#\s\"']+"),
    re.compile(r"(/api/tokens/)[^/?#\s\"']+"),
    # Query values that carry a secret, where no path comes before them (a query quoted alone).
    re.compile(
        r"([?&](?:link|token|share|key|code|invitation|password|secret|api_key|access_token)=)[^&#\s\"']*",
        re.IGNORECASE,
    ),
    re.compile(r"((?:Bearer|Token)\s+)[A-Za-z0-9_\-.]{8,}"),
    re.compile(r"(piweb\.token\.)[A-Za-z0-9_\-.]+"),
]
# A path (or whole URL) followed by its query: the query keeps its keys only.
_QUERY = re.compile(r"((?:[a-z][a-z0-9+.\-]*://[^\s/?#\"']*)?/[^\s?#\"']*)\?([^\s#\"'<>]*)", re.IGNORECASE)
_KEY = re.compile(r"[A-Za-z0-9_.\-\[\]]{1,40}")
# Token-like runs: long, mixing letters and digits; UUIDs excepted.
_RUN = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{24,}(?![A-Za-z0-9_\-])")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")


def query_keys(query: str) -> str:
    """Return a query string reduced to its keys (``q=x&page=2`` gives ``q&page``)."""
    keys = []
    for part in query.split("&"):
        key = part.split("=", 1)[0]
        if key:
            # A key is a name; anything else (a token pasted as the whole query) is not one.
            keys.append(key if _KEY.fullmatch(key) else REDACTED)
    return "&".join(keys)


def _strip_query(match: re.Match[str]) -> str:
    keys = query_keys(match.group(2))
    return match.group(1) + ("?" + keys if keys else "")


def _mask_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if _UUID.fullmatch(run) or not (_LETTER.search(run) and _DIGIT.search(run)):
        return run
    return REDACTED


def _mask_scanned(text: str) -> str:
    spans = secret_spans(text)
    for _kind, start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


def redact(text: str) -> str:
    """Return ``text`` with query values and every secret-looking value replaced by ``[redacted]``."""
    text = _mask_scanned(text)
    for pattern in _ROUTES:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    text = _QUERY.sub(_strip_query, text)
    return _RUN.sub(_mask_run, text)


class RedactSecretsFilter(logging.Filter):
    """Rewrite a record's message (arguments merged in) without its secrets; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it to the formatter
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # Exception messages may quote a URL; format the traceback now, redacted.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
