"""The unread inbox count in every signed-in page's header, drawn with the page rather than asked for
by a request of its own that would compete with the page's first data."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from discussion import queries


def inbox(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"inbox_unread": queries.unread_count(user.pk)}
