"""Live announcements of discussions, sent after commit: to the session's sockets and to users' inboxes."""

from __future__ import annotations

from collections.abc import Iterable

from core import realtime
from discussion.queries import unread_count

__all__ = ["announce_comment", "announce_inbox"]

COMMENT_EVENT = "comment"


def announce_comment(*, session_id: int, entry_id: str, thread_id: int, comment_id: int, change: str) -> None:
    """Tell the session's viewers that a thread on ``entry_id`` changed; pages re-read it over HTTP."""
    realtime.broadcast(
        session_id, COMMENT_EVENT, entryId=entry_id, threadId=thread_id, commentId=comment_id, change=change
    )


def announce_inbox(user_ids: Iterable[int]) -> None:
    """Send each user's new unread count to every page they have open."""
    for user_id in set(user_ids):
        realtime.inbox_changed(user_id=user_id, unread=unread_count(user_id))
