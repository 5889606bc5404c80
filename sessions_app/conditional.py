"""Conditional reads of a session: an ETag from the session's state, and 304 before any work is done.

The session page, the sync client, runners and the Pi package read the same session again and again, and
most of the time nothing changed. What a read answers is fixed by the session's state (append seq, leaf
and revision: entries are append-only, and the one rewrite, a redaction, bumps the revision), the query
and who asks (a member, or a link with its scope). The access check already reads the session's row, so
the tag costs no query: a caller whose copy is current gets 304 without the tree, path or context being
built, read from the cache or serialized.

The tag also names the viewer, so one browser shared by two people never shows one the other's answer,
and a version of the answers' shape, so a release that changes them does not serve old copies.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.http import parse_etags

from sessions_app.access import Access

__all__ = ["etag_for", "not_modified", "tagged"]

# Bump when any tagged answer changes shape.
SHAPE_VERSION = 1
# Browsers keep the answer but ask again each time (with If-None-Match); shared caches keep nothing.
CACHE_CONTROL = "private, no-cache"


def _viewer(request: HttpRequest, grant: Access) -> str:
    link = grant.link
    if link is not None:
        return f"link:{link.pk}:{link.scope}:{link.entry_id}:{link.frozen_seq}"
    user = getattr(request, "user", None)
    return f"user:{getattr(user, 'pk', None)}:{int(grant.can_write)}"


def etag_for(kind: str, request: HttpRequest, grant: Access, *extra: object) -> str:
    """Return the quoted strong ETag of ``kind`` for this viewer, the session as it is now and the query.

    ``extra`` holds whatever else the answer depends on (a row's update time, a context window).
    """
    session = grant.session
    query = sorted((k, v) for k, values in request.GET.lists() for v in values if k != "link")
    parts = (
        SHAPE_VERSION,
        kind,
        session.pk,
        session.created_at.timestamp(),
        session.next_seq,
        session.revision,
        session.leaf_seq,
        session.leaf_entry_id,
        _viewer(request, grant),
        query,
        extra,
    )
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f'"{digest}"'


def not_modified(request: HttpRequest, etag: str) -> HttpResponse | None:
    """Return a 304 when the caller's copy (If-None-Match) is the current one, else None."""
    header = request.headers.get("If-None-Match")
    if not header or request.method not in ("GET", "HEAD"):
        return None
    # Weak comparison (RFC 9110 13.1.2): a proxy that compressed the answer may have weakened the tag.
    # "*" is not honoured: it would answer 304 for a node the viewer was never shown.
    if etag in (tag.removeprefix("W/") for tag in parse_etags(header)):
        response = HttpResponse(status=304)
        response["ETag"] = etag
        response["Cache-Control"] = CACHE_CONTROL
        return response
    return None


def tagged[R: Any](response: R, etag: str) -> R:
    """Mark a 200 answer with its tag and the cache policy that makes clients ask with it."""
    if getattr(response, "status_code", 200) == 200:
        response["ETag"] = etag
        response["Cache-Control"] = CACHE_CONTROL
    return response
