"""Lines whose secrets were redacted: the marker, and whether a client's line is the original of one.

A redacted line keeps everything but each secret, which became ``[REDACTED:<kind>]``. Clients that still
hold the original (a re-imported file, a sync client pushing its whole file again) send the secret
back; such a line is the stored one, not a different entry, and is neither refused nor stored again.
"""

from __future__ import annotations

import re

__all__ = ["MARKER_PREFIX", "is_redaction_of", "marker"]

MARKER_PREFIX = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
# What a marker stood for: the characters of one JSON string, at least one.
_SECRET = r'(?:[^"\\]|\\.)+?'


def marker(kind: str) -> str:
    """Return what a secret of this kind is replaced by."""
    return f"{MARKER_PREFIX}{kind}]"


def is_redaction_of(stored: str, line: str) -> bool:
    """Return whether ``stored`` is ``line`` with secrets replaced by markers (and otherwise the same)."""
    if MARKER_PREFIX not in stored:
        return False
    parts = _MARKER.split(stored)
    if len(parts) == 1:
        return False
    return re.fullmatch(_SECRET.join(re.escape(p) for p in parts), line, re.DOTALL) is not None
