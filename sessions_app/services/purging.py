"""Purge deleted sessions: their rows go in batches, one short transaction each, after the session was hidden.

``delete_session`` only hides a session (``deleted_at``, which ``ChatSession.objects`` leaves out) and queues
``sessions_app.tasks.purge_deleted_session``, which calls ``purge_session`` here. It deletes the entries and
their search rows by ranges of ``seq`` and the segments by ranges of ``index`` (ranges come from the
session's counters, so no row is ever read into memory), then the session row itself; Django's collector
takes the few dependents left with it (runs, omitted attempts, usage rows, shares, links) and keeps the
action log's rows, labels included, with their session cleared.

Every step deletes only what is still there, so a purge killed at any point is finished by running it
again: the task's redelivery, the sweep each worker queues when it starts, or
``manage.py purge_deleted_sessions``. Two purges of one session at once only wait on each other's locks.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connection, models, transaction
from django.utils import timezone

from actionlog.facade import record_action
from core.actors import Actor
from core.tasks import enqueue
from sessions_app.models import ChatSession, Entry, EntrySearch, EntrySums, Segment, ToolUse
from sessions_app.verbs import Action

__all__ = ["ENTRY_BATCH", "purge_deleted_sessions", "purge_session", "queue_purge"]

log = logging.getLogger(__name__)

# Entries per DELETE. Each batch commits on its own, so locks and WAL stay small and a killed purge loses
# at most one batch of work; 20k rows of a typical session take well under a second.
ENTRY_BATCH = 20_000
SEGMENT_BATCH = 50_000


def purge_session(session_id: int, *, actor: Actor, batch: int = ENTRY_BATCH) -> bool:
    """Delete every row of a deleted session; return False when there was none (purged, or never deleted).

    A session that was not deleted is never touched, whoever asks. The last transaction, which deletes
    the session row, logs the purge (its label and id kept, as for every row of the session).
    """
    found = (
        ChatSession.with_deleted.filter(pk=session_id, deleted_at__isnull=False)
        .values_list("next_seq", "next_segment")
        .first()
    )
    if found is None:
        return False
    next_seq, next_segment = found
    _delete_by_ranges(Entry, "seq", session_id, next_seq, batch)
    _delete_by_ranges(EntrySearch, "seq", session_id, next_seq, batch)
    _delete_by_ranges(EntrySums, "seq", session_id, next_seq, batch)
    _delete_by_ranges(ToolUse, "call_seq", session_id, next_seq, batch)
    _delete_by_ranges(Segment, "index", session_id, next_segment, SEGMENT_BATCH)
    with transaction.atomic():
        # What is left is small: the collector deletes the session's runs, audit rows, shares and links
        # (and any entry a range missed) and clears the session from the action log and from forks.
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        if session is None or session.deleted_at is None:
            return False  # another purge finished it meanwhile
        record_action(actor=actor, action=Action.PURGE, session=session, entries=next_seq)
        session.delete()
    return True


def _delete_by_ranges(model: type[models.Model], column: str, session_id: int, end: int, batch: int) -> None:
    """Delete the session's rows of ``model`` whose ``column`` is below ``end``, one range per transaction."""
    table = connection.ops.quote_name(model._meta.db_table)
    name = connection.ops.quote_name(column)
    statement = f"DELETE FROM {table} WHERE session_id = %s AND {name} >= %s AND {name} < %s"
    for low in range(0, end, batch):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, [session_id, low, low + batch])


def purge_deleted_sessions(*, actor: Actor, older_than: timedelta | None = None) -> int:
    """Purge every deleted session (only those deleted at least ``older_than`` ago); return how many."""
    pending = ChatSession.with_deleted.filter(deleted_at__isnull=False)
    if older_than is not None:
        pending = pending.filter(deleted_at__lte=timezone.now() - older_than)
    purged = 0
    for session_id in list(pending.order_by("deleted_at").values_list("pk", flat=True)):
        purged += purge_session(session_id, actor=actor)
    return purged


def queue_purge(session_id: int) -> None:
    """Queue the purge of a session just hidden; if the broker is down, the next sweep purges it."""
    try:
        enqueue("sessions.purge_deleted_session", session_id)
    except Exception:
        log.exception("could not queue the purge of deleted session %s", session_id)
