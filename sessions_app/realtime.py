"""Group names and broadcasts for live session views. Called from ``transaction.on_commit`` only.

Events carry the session id and its latest append sequence, nothing more: the database is the
truth and a client that misses an event catches up through ``entries?since=``.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

__all__ = ["broadcast", "group_name", "leaf_moved", "session_changed"]


def group_name(session_id: int) -> str:
    """Return the Channels group of one session's viewers."""
    return f"session-{session_id}"


def broadcast(session_id: int, event: str, **fields: Any) -> None:
    """Send one event to the session's group; a layer failure is logged, never raised to the writer."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "session.event", "event": event, "session": session_id, **fields}
    try:
        async_to_sync(layer.group_send)(group_name(session_id), message)
    except Exception:  # the write is committed; viewers resync from the database on their next event
        log.warning("live event %s for session %s was not delivered", event, session_id, exc_info=True)


def session_changed(*, session_id: int, last_seq: int) -> None:
    broadcast(session_id, "entries_appended", seq=last_seq)


def leaf_moved(*, session_id: int, leaf: str | None, last_seq: int) -> None:
    broadcast(session_id, "leaf_moved", leaf=leaf, seq=last_seq)
