"""Where viewers of open sessions are kept: a Redis hash per session, or this process's memory.

With Redis (``REDIS_URL``), every web process sees every viewer: a hash ``piweb:presence:<pk>`` holds
one field per open socket; a field's own expiry is in its value (checked on every read, so a tab whose
connection died unannounced drops out once its heartbeat lapses) and the whole hash expires once no one
has beaten for a while. Without Redis (the embedded mode, one web process) a dictionary does the same.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any, Protocol

from django.conf import settings

from live.presence_rules import Viewer, decode, encode, split_expired

__all__ = ["PresenceBoard", "board", "heartbeat_seconds", "ttl_seconds"]


def ttl_seconds() -> float:
    return float(settings.PIWEB_PRESENCE_TTL)


def heartbeat_seconds() -> float:
    return float(settings.PIWEB_PRESENCE_HEARTBEAT)


class PresenceBoard(Protocol):
    async def put(self, session_pk: int, viewer: Viewer) -> None: ...

    async def remove(self, session_pk: int, key: str) -> None: ...

    async def read(self, session_pk: int) -> tuple[list[Viewer], bool]:
        """Return the live viewers and whether any expired ones were dropped just now."""
        ...


class MemoryBoard:
    """This process's viewers (the embedded mode, where one web process serves every socket)."""

    def __init__(self) -> None:
        self.sessions: dict[int, dict[str, Viewer]] = {}

    async def put(self, session_pk: int, viewer: Viewer) -> None:
        self.sessions.setdefault(session_pk, {})[viewer.key] = viewer

    async def remove(self, session_pk: int, key: str) -> None:
        viewers = self.sessions.get(session_pk)
        if viewers is not None:
            viewers.pop(key, None)
            if not viewers:
                del self.sessions[session_pk]

    async def read(self, session_pk: int) -> tuple[list[Viewer], bool]:
        viewers = self.sessions.get(session_pk, {})
        alive, expired = split_expired(viewers.values(), time.time())
        for viewer in expired:
            viewers.pop(viewer.key, None)
        return alive, bool(expired)


class RedisBoard:
    """Every process's viewers, in one Redis hash per session."""

    def __init__(self, url: str) -> None:
        self.url = url
        # One client per event loop: a client's connections belong to the loop that opened them.
        self.clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def client(self) -> Any:
        import redis.asyncio

        loop = asyncio.get_running_loop()
        found = self.clients.get(loop)
        if found is None:
            found = redis.asyncio.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)
            self.clients[loop] = found
        return found

    @staticmethod
    def key(session_pk: int) -> str:
        return f"piweb:presence:{session_pk}"

    async def put(self, session_pk: int, viewer: Viewer) -> None:
        key = self.key(session_pk)
        async with self.client().pipeline(transaction=False) as pipe:
            pipe.hset(key, viewer.key, encode(viewer))
            # The hash outlives its last heartbeat by a margin, then goes by itself (a Pi writer's
            # beats are further apart than a tab's: the hash waits for it too).
            pipe.expire(key, int(max(ttl_seconds() * 4, viewer.expires - time.time())) + 1)
            await pipe.execute()

    async def remove(self, session_pk: int, key: str) -> None:
        await self.client().hdel(self.key(session_pk), key)

    async def read(self, session_pk: int) -> tuple[list[Viewer], bool]:
        stored = await self.client().hgetall(self.key(session_pk))
        viewers = [v for v in (decode(text) for text in stored.values()) if v is not None]
        alive, expired = split_expired(viewers, time.time())
        broken = [field for field, text in stored.items() if decode(text) is None]
        if expired or broken:
            await self.client().hdel(self.key(session_pk), *[v.key for v in expired], *broken)
        return alive, bool(expired)


_boards: dict[str, PresenceBoard] = {}


def board() -> PresenceBoard:
    """Return the board for this configuration (Redis when configured, else memory)."""
    url = settings.PRESENCE_REDIS_URL
    found = _boards.get(url)
    if found is None:
        found = RedisBoard(url) if url else MemoryBoard()
        _boards[url] = found
    return found
