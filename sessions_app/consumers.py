"""Live session views: one socket per open session page, fed by the session's Channels group.

Events are hints, not data. Each carries the session's latest append sequence; the client compares it
with what it holds and fetches ``entries?since=`` when it is behind. The socket also answers a
``sync`` message with the current sequence, so a client that suspects a dropped event (or has just
reconnected) learns how far behind it is without waiting for the next event.

What a socket forwards is decided by ``link_scope.live_event`` for its grant, the same rule REST reads
follow. Access is re-checked on every access event (any revocation, whatever made it), on every
``sync``, and for share links when they expire and every ``RECHECK_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.utils import timezone

from . import access, link_scope, realtime

# Close codes in the application range: the page shows "no access" instead of retrying forever.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# The one mapping of access refusals to close codes (HTTP statuses for the same refusals: api/errors.py).
# A session the viewer may not see closes as forbidden: the socket never tells "missing" from "hidden".
CLOSE_CODES: dict[type[access.AccessDenied], int] = {
    access.NotSignedIn: CLOSE_UNAUTHENTICATED,
    access.NotVisible: CLOSE_FORBIDDEN,
    access.Forbidden: CLOSE_FORBIDDEN,
}


def close_code(exc: access.AccessDenied) -> int:
    """Return the close code for an access refusal."""
    return CLOSE_CODES.get(type(exc), CLOSE_FORBIDDEN)


# Share-link sockets re-check their link this often, besides at its expiry and on every access event.
RECHECK_SECONDS = 60.0
SUBPROTOCOL = "piweb"

ACCESS_EVENTS = link_scope.ACCESS_EVENTS


@dataclass(frozen=True, slots=True)
class SessionState:
    last_seq: int | None
    leaf_id: str | None
    grant: link_scope.Grant = link_scope.Grant.MEMBER
    expires_at: datetime | None = None


def read_state(user: Any, pk: int, link_token: str | None = None) -> SessionState:
    """Return the session's position as this viewer may see it; raise AccessDenied when they may not."""
    grant = access.require_access(user, pk, link_token=link_token)
    expires = grant.link.expires_at if grant.link is not None else None
    return SessionState(
        link_scope.visible_last_seq(grant), grant.leaf_id(), link_scope.grant_of(grant), expires
    )


class SessionConsumer(AsyncJsonWebsocketConsumer):
    """Join ``session-<pk>`` after checking read access; forward its events; answer ``sync``."""

    session_pk: int
    group: str
    link_token: str | None = None
    grant: link_scope.Grant = link_scope.Grant.MEMBER
    watch: asyncio.Task[None] | None = None
    expires_at: datetime | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.session_pk = int(self.scope["url_route"]["kwargs"]["pk"])
        self.group = realtime.group_name(self.session_pk)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.link_token = self.scope.get("share_token") or (query.get(access.LINK_PARAM) or [None])[0] or None
        if (user is None or not user.is_authenticated) and not self.link_token:
            await self.close(code=close_code(access.NotSignedIn()))
            return
        state = await self.current_state()
        if state is None:
            return
        self.grant = state.grant
        # Join before reporting the state: an append between the two is then seen at least once.
        await self.channel_layer.group_add(self.group, self.channel_name)
        offered = self.scope.get("subprotocols") or []
        await self.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        await self.send_state(state, client_seq=None)
        if state.grant is not link_scope.Grant.MEMBER:
            self.start_watch(state.expires_at)

    async def disconnect(self, code: int) -> None:
        if self.watch is not None:
            self.watch.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        # orjson refuses deep nesting without recursing; anything undecodable is answered as unknown.
        try:
            return orjson.loads(text_data)
        except orjson.JSONDecodeError:
            return None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "sync":
            await self.send_json({"type": "error", "error": 'Only {"type": "sync", "seq": n} is understood.'})
            return
        seq = content.get("seq")
        client_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        # Access is re-checked on every sync as well as on every access event.
        state = await self.recheck()
        if state is not None:
            await self.send_state(state, client_seq=client_seq)

    async def current_state(self) -> SessionState | None:
        """Return the viewer's state, or close the socket with the refusal's code and return None."""
        try:
            return await database_sync_to_async(read_state)(
                self.scope.get("user"), self.session_pk, self.link_token
            )
        except access.AccessDenied as exc:
            await self.close(code=close_code(exc))
            return None

    async def recheck(self) -> SessionState | None:
        """Re-read access; close the socket when it is gone, else adopt the (maybe changed) grant."""
        state = await self.current_state()
        if state is None:
            return None
        self.grant = state.grant
        if state.grant is not link_scope.Grant.MEMBER and state.expires_at != self.expires_at:
            # The link was given another expiry: watch for that one instead.
            self.start_watch(state.expires_at)
        return state

    def start_watch(self, expires_at: datetime | None) -> None:
        if self.watch is not None and self.watch is not asyncio.current_task():
            self.watch.cancel()
        self.expires_at = expires_at
        self.watch = asyncio.create_task(self.watch_link(expires_at))

    async def watch_link(self, expires_at: datetime | None) -> None:
        """Close a share-link socket when its link expires or is found revoked, however that happened."""
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                wait = RECHECK_SECONDS
                if expires_at is not None:
                    wait = min(wait, max(0.0, (expires_at - timezone.now()).total_seconds()) + 0.05)
                await asyncio.sleep(wait)
                state = await self.recheck()
                if state is None or self.watch is not asyncio.current_task():
                    return  # closed, or a newer watch took over
                expires_at = state.expires_at

    async def send_state(self, state: SessionState, *, client_seq: int | None) -> None:
        behind = state.last_seq is not None and (client_seq is None or client_seq < state.last_seq)
        await self.send_json(
            {
                "type": "state",
                "session": self.session_pk,
                "seq": state.last_seq,
                "leafId": state.leaf_id,
                "behind": behind if client_seq is not None else None,
            }
        )

    async def session_event(self, message: dict[str, Any]) -> None:
        """Forward a group event as ``{"type": "event", "event": name, ...}``, as the grant allows."""
        if message.get("event") in ACCESS_EVENTS:
            await self.recheck()
            return
        body = link_scope.live_event(self.grant, message)
        if body is not None:
            await self.send_json({"type": "event", **body})


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Refuse a socket whose path names no live view (for example a session id that is not a number)."""

    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_FOUND)
