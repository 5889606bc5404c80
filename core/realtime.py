"""Group names and broadcasts for live session views. Called from ``transaction.on_commit`` only.

Events carry the session id and its latest append sequence, nothing more: the database is the
truth and a client that misses an event catches up through ``entries?since=``.

Broadcasts are handed to one long-lived event loop thread per process, so a writer never waits for
Redis and the channel layer keeps its connections instead of opening one per event.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import logging
import threading
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

__all__ = [
    "access_changed",
    "broadcast",
    "credential_tag",
    "flush",
    "group_message",
    "group_name",
    "inbox_changed",
    "inbox_group",
    "leaf_moved",
    "send_to_group",
    "session_changed",
    "viewer_group",
]


def group_name(session_id: int) -> str:
    """Return the Channels group of one session's viewers."""
    return f"session-{session_id}"


def viewer_group(user_id: int) -> str:
    """Return the Channels group of every socket a user opened, whatever session it shows."""
    return f"viewer-{user_id}"


def credential_tag(secret: str) -> str:
    """Return a name for a token digest or a browser session key that is safe to send through Redis."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _Sender:
    """A daemon thread whose event loop owns the channel-layer connections and sends events in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[Any, str, dict[str, Any]]] | None = None
        self._in_flight = 0

    def send(self, group: str, message: dict[str, Any]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        if type(layer).__name__ == "InMemoryChannelLayer":
            # The in-memory layer lives on the caller's loop; another loop would never reach its readers.
            async_to_sync(layer.group_send)(group, message)
            return
        with self._lock:
            self._in_flight += 1
            if self._loop is None:
                ready = threading.Event()
                threading.Thread(target=self._run, args=(ready,), name="piweb-broadcast", daemon=True).start()
                ready.wait()
                # A command or shell exiting right after its commit still delivers what it announced
                # (a revocation above all).
                atexit.register(self.flush)
            loop, events = self._loop, self._queue
        assert loop is not None and events is not None
        loop.call_soon_threadsafe(events.put_nowait, (layer, group, message))

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop, self._queue = loop, asyncio.Queue()
        ready.set()
        loop.run_until_complete(self._drain())

    async def _drain(self) -> None:
        assert self._queue is not None
        while True:
            layer, group, message = await self._queue.get()
            try:
                await layer.group_send(group, message)
            except Exception:
                # The write is committed; viewers resync from the database on their next event.
                log.warning("live event %s was not delivered", message.get("event"), exc_info=True)
            with self._lock:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.notify_all()

    def flush(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout)


_sender = _Sender()


def broadcast(session_id: int, event: str, **fields: Any) -> None:
    """Send one event to the session's group without blocking the caller; failures are logged."""
    message = {"type": "session.event", "event": event, "session": session_id, **fields}
    try:
        _sender.send(group_name(session_id), message)
    except Exception:
        log.warning("live event %s for session %s was not delivered", event, session_id, exc_info=True)


def send_to_group(group: str, message: dict[str, Any]) -> None:
    """Send a message of any consumer type to any group (a runner's, say), without blocking the caller."""
    try:
        _sender.send(group, message)
    except Exception:
        log.warning("%s to %s was not delivered", message.get("type"), group, exc_info=True)


def group_message(session_id: int, message: dict[str, Any]) -> None:
    """Send a message of any consumer type to the session's group (presence changes made outside a socket)."""
    try:
        _sender.send(group_name(session_id), message)
    except Exception:
        log.warning("%s for session %s was not delivered", message.get("type"), session_id, exc_info=True)


def flush(timeout: float = 5.0) -> None:
    """Wait for broadcasts in flight (tests and short-lived commands call this before exiting)."""
    _sender.flush(timeout)


def access_changed(*, user_id: int, ended: str | None = None) -> None:
    """Make every socket of the user re-check its credentials and grant now (call after commit).

    ``ended`` is the ``credential_tag`` of a token or browser session that no longer works: sockets
    opened with it close without asking the database (a logout announces before its session row goes).
    """
    message = {"type": "access.changed", "user": user_id, "ended": ended}
    try:
        _sender.send(viewer_group(user_id), message)
    except Exception:
        log.warning("access change for user %s was not delivered", user_id, exc_info=True)


def inbox_group(user_id: int) -> str:
    """Return the Channels group of the user's session pages that show the inbox count in their header.

    Kept apart from ``viewer_group``, whose members all handle access changes and nothing else."""
    return f"inbox-{user_id}"


def inbox_changed(*, user_id: int, unread: int) -> None:
    """Send the user's unread count to every session page they have open (call after commit)."""
    try:
        _sender.send(inbox_group(user_id), {"type": "inbox.changed", "unread": unread})
    except Exception:
        log.warning("inbox count for user %s was not delivered", user_id, exc_info=True)


def session_changed(*, session_id: int, last_seq: int) -> None:
    broadcast(session_id, "entries_appended", seq=last_seq)


def leaf_moved(*, session_id: int, leaf: str | None, last_seq: int) -> None:
    broadcast(session_id, "leaf_moved", leaf=leaf, seq=last_seq)
