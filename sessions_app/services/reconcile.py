"""Repair the bookkeeping kept beside a session's entries, for sessions the previous release wrote to.

During an upgrade the previous release keeps appending while the new schema is in place; it writes the
entries but not what it did not know about: the session's stored bytes, the entries' running sums, the
files it changed (counted for the first time on sessions stored before the count existed), the steps
the files view sums, and what other apps keep per message (costs, the usage rollup), which they repair
themselves when asked through ``signals.bookkeeping_checked``. The migrations' backfills ran before
those appends, or passed a session that already had rows, so nothing else finds them.

Each session is checked from its rows (not from whether it has any bookkeeping at all) and repaired in a
short transaction holding its row, as an append holds it; a session found right is left alone, so a run
can be stopped and started again, or run twice, with the same result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection, transaction

from sessions_app import changed_files, file_steps, signals
from sessions_app.models import ChatSession
from sessions_app.services import context_sums, tool_index

__all__ = ["Reconciled", "reconcile", "reconcile_session"]


@dataclass
class Reconciled:
    """What a run checked and repaired: ``repaired`` counts sessions by the bookkeeping they lacked."""

    checked: int = 0
    last_pk: int = 0
    repaired: Counter[str] = field(default_factory=Counter)


def _stored_bytes(session_id: int) -> bool:
    """Set the session's stored bytes to its lines' bytes; return whether they were wrong."""
    length = "octet_length(raw)" if connection.vendor == "postgresql" else "length(CAST(raw AS BLOB))"
    with transaction.atomic():
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        if session is None:
            return False
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT coalesce(sum({length}), 0) FROM sessions_app_entry WHERE session_id = %s",
                [session_id],
            )
            actual = int(cursor.fetchone()[0])
        if actual == session.stored_bytes:
            return False
        ChatSession.with_deleted.filter(pk=session_id).update(stored_bytes=actual)
        return True


def _sums_missing(session_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM sessions_app_entry e WHERE e.session_id = %s "
            "AND e.depth IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sessions_app_entrysums s "
            "WHERE s.session_id = e.session_id AND s.seq = e.seq))",
            [session_id],
        )
        return bool(cursor.fetchone()[0])


def _files_changed(session_id: int) -> bool:
    """Count the session's changed files from its rows; return whether the count was missing or wrong."""
    with transaction.atomic():
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        return session is not None and changed_files.count_session(session)


def _file_steps(session_id: int) -> bool:
    """Write the steps of the files view the session lacks; return whether any were missing."""
    with transaction.atomic():
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        return session is not None and file_steps.extend(session)


def reconcile_session(session_id: int) -> list[str]:
    """Check one session's bookkeeping and repair what is missing or stale; return what was repaired."""
    repaired: list[str] = []
    if _stored_bytes(session_id):
        repaired.append("stored bytes")
    if _sums_missing(session_id) and context_sums.backfill_session(session_id, missing_only=True):
        repaired.append("context sums")
    if _files_changed(session_id):
        repaired.append("changed files")
    # Also the backfill of sessions stored before the index of work existed.
    if (answer := tool_index.reconcile_session(session_id)) is not None:
        repaired.append(answer)
    # After the index: the steps read the assistant messages it names.
    if _file_steps(session_id):
        repaired.append("file steps")
    for _, answer in signals.bookkeeping_checked.send(ChatSession, session_id=session_id):
        if isinstance(answer, str):
            repaired.append(answer)
    return repaired


def reconcile(
    *, after: int = 0, batch: int = 200, progress: Callable[[Reconciled], None] | None = None
) -> Reconciled:
    """Reconcile every live session with a primary key above ``after``, ``batch`` ids at a time.

    ``progress`` is called after each batch with the totals so far; its ``last_pk`` resumes a run.
    """
    done = Reconciled(last_pk=after)
    while True:
        ids = list(
            ChatSession.objects.filter(pk__gt=done.last_pk)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return done
        for pk in ids:
            done.repaired.update(reconcile_session(pk))
        done.checked += len(ids)
        done.last_pk = ids[-1]
        if progress is not None:
            progress(done)
