"""The session socket's presence: who else has the session open and which node each has selected.

A socket joins the board with its first ``{"type": "presence", "node": id | null}`` (a page sends it
once open; clients that never send one, such as scripts, are not shown), sends it again when its tab
selects another node and every heartbeat, and leaves the board when it closes for any reason (the tab
closed, access revoked). Changes are announced to the session's group, so sockets in every
web process learn them; a heartbeat is answered to its own socket only (with the current roster, from
which viewers whose heartbeat lapsed are dropped, and announced when any were). Members receive
``{"type": "presence", "you": key, "viewers": [...]}``; link holders receive nothing (see
``domain.presence``). Presence is a courtesy: a failing store is logged and never closes a socket.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from live.presence import board, heartbeat_seconds, ttl_seconds
from live.presence_rules import MAX_NODE_CHARS, Viewer, roster
from sessions_app.facade import link_scope

__all__ = ["PresenceMixin"]

log = logging.getLogger(__name__)

# A socket announces a move to the whole group at most this often (a client sending moves in a burst
# would otherwise make every viewer's socket send as many); a move held back goes out once that is over.
ANNOUNCE_EVERY = 0.2


class PresenceMixin:
    """Presence for ``SessionConsumer`` (which provides the group, the grant and ``send_json``)."""

    session_pk: int
    group: str
    grant: link_scope.Grant
    ended: bool
    scope: dict[str, Any]
    channel_layer: Any
    presence_key: str | None = None
    presence_node: str | None = None
    presence_announced: tuple[str | None, float] = (None, 0.0)  # the node the group last heard, and when
    presence_pending: asyncio.Task[None] | None = None

    if TYPE_CHECKING:

        async def send_json(self, content: Any, close: bool = False) -> None: ...  # the consumer's

    def presence_viewer(self) -> Viewer:
        user = self.scope.get("user")
        expires = time.time() + ttl_seconds()
        if self.grant == link_scope.Grant.MEMBER and user is not None and user.is_authenticated:
            name = (user.get_full_name() or "").strip() or user.get_username()
            return Viewer(
                key=self.presence_key or "",
                kind="user",
                user_id=user.pk,
                name=name,
                node=self.presence_node,
                expires=expires,
            )
        return Viewer(
            key=self.presence_key or "",
            kind="link",
            user_id=None,
            name="",
            node=self.presence_node,
            expires=expires,
        )

    async def presence_receive(self, content: dict[str, Any]) -> None:
        """Take a heartbeat, maybe with a newly selected node."""
        node = content.get("node")
        if node is not None and (not isinstance(node, str) or not node or len(node) > MAX_NODE_CHARS):
            await self.send_json(
                {
                    "type": "error",
                    "error": f"presence: node must be an entry id (a string of 1 to {MAX_NODE_CHARS} "
                    "characters) or null.",
                }
            )
            return
        if self.ended:
            return
        joining = self.presence_key is None
        if joining:  # the first one: show this socket to the others
            self.presence_key = secrets.token_urlsafe(9)
        self.presence_node = node
        heard, when = self.presence_announced
        wait = ANNOUNCE_EVERY - (time.monotonic() - when)
        moved = node != heard and wait <= 0
        await self.presence_beat(announce=joining or moved)
        if node != heard and not (joining or moved) and self.presence_pending is None:
            self.presence_pending = asyncio.create_task(self.presence_announce_later(wait))

    async def presence_announce_later(self, wait: float) -> None:
        """Announce a move that was held back, once the interval has passed (if it still stands)."""
        try:
            await asyncio.sleep(max(0.0, wait))
        finally:
            self.presence_pending = None
        still_moved = self.presence_node != self.presence_announced[0]
        if still_moved and not self.ended and self.presence_key is not None:
            await self.presence_beat(announce=True)

    async def presence_beat(self, *, announce: bool) -> None:
        try:
            store = board()
            await store.put(self.session_pk, self.presence_viewer())
            viewers, dropped = await store.read(self.session_pk)
        except (RedisError, OSError):
            log.warning("presence: the store did not answer", exc_info=True)
            return
        if announce or dropped:
            self.presence_announced = (self.presence_node, time.monotonic())
            await self.presence_announce(viewers)
        else:
            await self.presence_send(roster(viewers))

    async def presence_leave(self) -> None:
        """Take this socket off the board and tell the others (it closed, or its access ended)."""
        key, self.presence_key = self.presence_key, None
        if key is None:
            return
        pending = self.presence_pending
        if pending is not None and pending is not asyncio.current_task():
            pending.cancel()
        try:
            store = board()
            await store.remove(self.session_pk, key)
            viewers, _ = await store.read(self.session_pk)
        except (RedisError, OSError):
            log.warning("presence: the store did not answer", exc_info=True)
            return
        await self.presence_announce(viewers)

    async def presence_announce(self, viewers: list[Viewer]) -> None:
        await self.channel_layer.group_send(
            self.group, {"type": "presence.changed", "roster": roster(viewers)}
        )

    async def presence_changed(self, message: dict[str, Any]) -> None:
        """Forward a roster announced to the group (members only)."""
        if self.ended or self.presence_key is None:
            return
        await self.presence_send(message["roster"])

    async def presence_send(self, viewers: list[dict[str, Any]]) -> None:
        if self.grant != link_scope.Grant.MEMBER:
            return
        await self.send_json(
            {
                "type": "presence",
                "you": self.presence_key,
                "heartbeat": heartbeat_seconds(),
                "viewers": viewers,
            }
        )
