"""A Pi writing a session as it works, shown beside the people who have it open.

The Pi package names its device on every sync push and beats through ``POST /api/sync/presence/``
while Pi runs; each puts a viewer of kind "pi" on the session's presence board (node: the entry it
wrote last) and tells the session's group, so every open page shows "live from Pi on <device>".
Its last beat (or Pi quitting) takes it off. Like all presence, a courtesy: a failing store is
logged, never an error for the writer.
"""

from __future__ import annotations

import hashlib
import logging
import time

from asgiref.sync import async_to_sync
from django.conf import settings
from redis.exceptions import RedisError

from core import realtime
from live.presence import board
from live.presence_rules import Viewer, roster

__all__ = ["MAX_DEVICE_CHARS", "heartbeat_seconds", "pi_left", "pi_writing"]

log = logging.getLogger(__name__)

MAX_DEVICE_CHARS = 80


def heartbeat_seconds() -> float:
    return float(settings.PIWEB_WRITER_HEARTBEAT)


def _key(user_id: int, device: str) -> str:
    # One writer per person and device: its beats replace each other instead of piling up.
    return "pi-" + hashlib.sha256(f"{user_id}\x00{device}".encode()).hexdigest()[:16]


def pi_writing(*, session_id: int, user_id: int, name: str, device: str, node: str | None) -> None:
    """Show (or keep showing) the user's Pi on ``device`` as writing the session, at ``node``."""
    viewer = Viewer(
        key=_key(user_id, device),
        kind="pi",
        user_id=user_id,
        name=name,
        node=node,
        expires=time.time() + float(settings.PIWEB_WRITER_TTL),
        device=device,
    )
    _change(session_id, viewer=viewer, gone=None)


def pi_left(*, session_id: int, user_id: int, device: str) -> None:
    """Take the user's Pi on ``device`` off the session (it quit, or the user turned sending off)."""
    _change(session_id, viewer=None, gone=_key(user_id, device))


def _change(session_id: int, *, viewer: Viewer | None, gone: str | None) -> None:
    async def change() -> list[Viewer]:
        store = board()
        if viewer is not None:
            await store.put(session_id, viewer)
        if gone is not None:
            await store.remove(session_id, gone)
        return (await store.read(session_id))[0]

    try:
        viewers = async_to_sync(change)()
    except (RedisError, OSError):
        log.warning("presence: the store did not answer", exc_info=True)
        return
    realtime.group_message(session_id, {"type": "presence.changed", "roster": roster(viewers)})
