"""Live session views: one socket per open session page, fed by the session's Channels group.

Events are hints, not data. Each carries the session's latest append sequence; the client compares it
with what it holds and fetches ``entries?since=`` when it is behind. The socket also answers a
``sync`` message with the current sequence, so a client that suspects a dropped event (or has just
reconnected) learns how far behind it is without waiting for the next event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import realtime
from .models import ChatSession

# Close codes in the application range: the page shows "no access" instead of retrying forever.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


@dataclass(frozen=True, slots=True)
class SessionState:
    last_seq: int | None
    leaf_id: str | None


def read_state(user: Any, pk: int) -> SessionState | None:
    """Return the session's position if ``user`` may read it, else None."""
    row = ChatSession.objects.visible_to(user).filter(pk=pk).values_list("next_seq", "leaf_entry_id").first()
    if row is None:
        return None
    next_seq, leaf = row
    return SessionState(next_seq - 1 if next_seq else None, leaf)


class SessionConsumer(AsyncJsonWebsocketConsumer):
    """Join ``session-<pk>`` after checking read access; forward its events; answer ``sync``."""

    session_pk: int
    group: str

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.session_pk = int(self.scope["url_route"]["kwargs"]["pk"])
        self.group = realtime.group_name(self.session_pk)
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        state = await database_sync_to_async(read_state)(user, self.session_pk)
        if state is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join before reporting the state: an append between the two is then seen at least once.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_state(state, client_seq=None)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "sync":
            await self.send_json({"type": "error", "error": 'Only {"type": "sync", "seq": n} is understood.'})
            return
        seq = content.get("seq")
        client_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        # Access is re-checked on every sync, so a revoked share stops the feed at the next sync.
        state = await database_sync_to_async(read_state)(self.scope["user"], self.session_pk)
        if state is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.send_state(state, client_seq=client_seq)

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
        """Forward a group event as ``{"type": "event", "event": name, "seq": n, ...}``."""
        body = {k: v for k, v in message.items() if k != "type"}
        await self.send_json({"type": "event", **body})
