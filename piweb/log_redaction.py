"""Secrets never reach a log line: share-link tokens, API tokens and password-reset tokens are redacted.

A URL can carry a secret in its path (``/s/<token>/``, ``/accounts/reset/<uid>/<token>/``, the key
prefix in ``/api/tokens/<id>/``) or its query (``?link=``, ``?token=``); a header never reaches a log.
``redact`` rewrites any text (a path, a whole log message), ``RedactSecretsFilter`` applies it to every
record a handler writes, Django's ``Not Found: /s/<token>/`` warnings included, and the access log
(piweb.edge) formats its lines with it.
"""

from __future__ import annotations

import logging
import re

__all__ = ["REDACTED", "RedactSecretsFilter", "redact"]

REDACTED = "[redacted]"

_PATTERNS = [
    # Share-link pages.
    re.compile(r"(/s/)[^/?#\s\"']+"),
    # Password-reset links: the signed token (the uid part is harmless but goes with it).
    re.compile(r"(/accounts/reset/)[^/?#\s\"']+/[^/?#\s\"']+"),
    # An API token's key prefix, enough to look the token up.
    re.compile(r"(/api/tokens/)[^/?#\s\"']+"),
    # Query values that carry a secret, whatever the route.
    re.compile(
        r"([?&](?:link|token|share|key|code|invitation|password|secret|api_key|access_token)=)[^&#\s\"']*",
        re.IGNORECASE,
    ),
    # A token header value quoted in a message (an error repeating what it was given).
    re.compile(r"((?:Bearer|Token)\s+)[A-Za-z0-9_\-.]{8,}"),
    re.compile(r"(piweb\.token\.)[A-Za-z0-9_\-.]+"),
]


def redact(text: str) -> str:
    """Return ``text`` with every secret-bearing part replaced by ``[redacted]``."""
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


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
