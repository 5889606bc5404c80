"""The log of share-link opens: who opened a link (a user, or anonymous), when, and how often.

A page open counts once; API use through a link counts once per viewer and half hour (the page's own
API calls, a script paging entries), so a row is never written per request or socket frame. Opens are
coalesced into one row per link, viewer and day.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.core.cache import caches
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from core.actors import Actor
from governance.models import LinkView
from sessions_app.facade import ShareLink, access, find_link

__all__ = ["API_SESSION", "link_views", "record_link_open"]

log = logging.getLogger(__name__)

API_SESSION = timedelta(minutes=30)


def record_link_open(sender: Any, *, link: ShareLink, user: Any, via: str, **kwargs: Any) -> None:
    """Count one open of ``link`` (receiver of ``link_opened``); a failure never stops the viewer."""
    viewer = user.pk if user is not None else None
    key = f"linkview:{link.pk}:{viewer or 0}"
    try:
        cache = caches["shared"]
        seconds = int(API_SESSION.total_seconds())
        if via == "api":
            if not cache.add(key, 1, seconds):
                return  # the same viewer's API session, or the API calls of a page just opened
        else:
            cache.set(key, 1, seconds)
        _count(link, viewer)
    except (DatabaseError, OSError, ConnectionError):
        log.warning("the open of link %s was not logged", link.pk, exc_info=True)


def _count(link: ShareLink, viewer: int | None) -> None:
    now = timezone.now()
    day = timezone.localdate(now)
    for _ in range(2):
        with transaction.atomic():
            if LinkView.objects.filter(link=link, viewer_key=viewer or 0, day=day).update(
                count=F("count") + 1, last_at=now
            ):
                return
            try:
                with transaction.atomic():
                    LinkView.objects.create(
                        link=link,
                        viewer_id=viewer,
                        viewer_key=viewer or 0,
                        day=day,
                        first_at=now,
                        last_at=now,
                    )
                return
            except IntegrityError:
                continue  # another open made the row first: count into it


def link_views(*, actor: Actor, link: ShareLink | int) -> tuple[ShareLink, list[LinkView]]:
    """Return a link and its opens, newest day first (the session's owner only)."""
    link = find_link(link)
    access.authorize(actor, link.session, access.OWNER)
    rows = list(LinkView.objects.filter(link=link).select_related("viewer").order_by("-day", "-last_at"))
    return link, rows
