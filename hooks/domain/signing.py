"""The signature a receiver checks: HMAC-SHA256 of ``"<timestamp>.<body>"`` under the hook's secret."""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """Return the ``X-Piweb-Signature`` value of a body sent at ``timestamp`` (Unix seconds)."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def verify(
    secret: str, timestamp: str, body: bytes, header: str, *, now: float, tolerance: float = 300
) -> bool:
    """Return whether ``header`` signs ``body`` at ``timestamp`` and the timestamp is recent (a replayed
    request from long ago fails); what a receiver does, written once for the tests and the docs."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, sent, body), header)
