"""The files a session changed, on all its branches, kept at write time for the session list's count.

The receiver of ``entries_stored`` for tool results: in the transaction that stored them (holding the
session row, as every write does), each successful ``edit`` or ``write`` result names the file its call
changed (``pitree.files.changed_path``, the files view's rules); the path gets a ``ChangedFile`` row and
the session's ``files_changed`` is their count. Whatever the write path (import, append, sync, runs,
forks), and navigation stores no tool results, so the count stays right without reading any branch.

A result's call is in an assistant message above it: in the same batch when Pi wrote them together,
else found by going up the parents (through the results of the calls made beside it), a few rows at a
time. An import's batch is read back once, its tool results only, those that can be an edit or a write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection
from django.db.models import Case, F, Q, When

from pitree.files import changed_path, file_calls
from pitree.jsjson import parse_json
from sessions_app.models import ChangedFile, ChatSession, Entry

__all__ = ["ACTS_ON", "add_paths", "count_session", "record"]

ACTS_ON = (("message", "toolResult"),)
UP_ROUNDS = 64  # parents looked up at most, per result, for a call not in the batch

_Call = tuple[str, Mapping[str, Any]]


def _message(raw: str) -> Mapping[str, Any]:
    value = parse_json(raw)
    message = value.get("message") if isinstance(value, Mapping) else None
    return message if isinstance(message, Mapping) else {}


def _may_change(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "toolResult" and message.get("isError") is not True


class _Up:
    """What is known of the rows above the results: parents, and the file calls of assistant messages."""

    def __init__(self) -> None:
        self.parent: dict[int, int | None] = {}
        self.calls: dict[int, dict[str, _Call]] = {}  # assistant seq → its edit and write calls

    def add(self, seq: int, parent: int | None, message: Mapping[str, Any] | None) -> None:
        self.parent[seq] = parent
        if message is not None and message.get("role") == "assistant":
            self.calls[seq] = file_calls(message)

    def read(self, session: ChatSession, seqs: Iterable[int]) -> None:
        """Read these rows: their parents, and an assistant's line (other lines are not needed)."""
        rows = (
            Entry.objects.filter(session=session, seq__in=list(seqs))
            .annotate(line=Case(When(type="message", role="assistant", then=F("raw")), default=None))
            .values_list("seq", "parent_seq", "line")
        )
        for seq, parent, line in rows:
            self.add(seq, parent, _message(line) if line is not None else None)


def _paths(
    session: ChatSession, results: Sequence[tuple[int | None, Mapping[str, Any]]], up: _Up
) -> set[str]:
    """Return the paths the results' calls changed; ``results`` are (parent seq, tool result message)."""
    found: set[str] = set()
    # Each result climbs from its parent until an assistant message; unknown rows are read in rounds.
    climbing = [(parent, message) for parent, message in results if _may_change(message)]
    for _ in range(UP_ROUNDS):
        if not climbing:
            break
        missing = {seq for seq, _ in climbing if seq is not None and seq not in up.parent}
        if missing:
            up.read(session, missing)
        going_on = []
        for seq, message in climbing:
            if seq is None or seq not in up.parent:
                continue  # the root, or a row that is not there
            if seq in up.calls:
                call = up.calls[seq].get(str(message.get("toolCallId")))
                path = changed_path(call[0], call[1], message, session.cwd) if call else None
                if path is not None:
                    found.add(path)
                continue
            going_on.append((up.parent[seq], message))
        climbing = going_on
    return found


def _stored_results(
    session: ChatSession, first_seq: int, last_seq: int, up: _Up
) -> list[tuple[int | None, Mapping[str, Any]]]:
    """Read the batch's tool results that can be an edit or a write (their tool's name is in the line)."""
    rows = (
        Entry.objects.filter(
            session=session, seq__gte=first_seq, seq__lte=last_seq, type="message", role="toolResult"
        )
        .filter(Q(raw__contains='"edit"') | Q(raw__contains='"write"'))
        .order_by("seq")
        .values_list("seq", "parent_seq", "raw")
        .iterator(chunk_size=500)
    )
    results = []
    for seq, parent, raw in rows:
        message = _message(raw)
        up.add(seq, parent, message)
        if message.get("toolName") in ("edit", "write") or message.get("toolName") is None:
            results.append((parent, message))
    return results


def add_paths(session: ChatSession, paths: set[str]) -> None:
    """Record files changed by entries just stored whose changes the caller worked out by the same rules
    (``file_steps``, from a whole session's steps); the caller holds the session row."""
    if paths:
        _save(session, paths)


def _save(session: ChatSession, paths: set[str]) -> None:
    """Add the paths and count them again; the row lock every write holds keeps two counts apart."""
    ChangedFile.objects.bulk_create(
        [
            ChangedFile(
                session=session,
                digest=hashlib.sha256(p.encode("utf-8", "surrogatepass")).hexdigest(),
                path=p,
            )
            for p in sorted(paths)
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    table, files = ChatSession._meta.db_table, ChangedFile._meta.db_table
    with connection.cursor() as cursor:
        # A session not counted yet (stored before the count existed) keeps None until reconciled.
        cursor.execute(
            f"UPDATE {table} SET files_changed = (SELECT count(*) FROM {files} WHERE session_id = %s) "
            "WHERE id = %s AND files_changed IS NOT NULL RETURNING files_changed",
            [session.pk, session.pk],
        )
        row = cursor.fetchone()
    if row is not None:
        session.files_changed = int(row[0])


def record(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Record the files the batch's tool results changed (receiver of ``entries_stored``)."""
    if rows is None and first_seq == 0 and session.file_steps_through == last_seq:
        return  # a whole session whose steps were just worked out: they named its changes (``add_paths``)
    up = _Up()
    if rows is None:
        results = _stored_results(session, first_seq, last_seq, up)
    else:
        results = []
        for row in rows:
            if row.type != "message" or row.role not in ("assistant", "toolResult"):
                up.parent[row.seq] = row.parent_seq
                continue
            message = _message(row.raw)
            up.add(row.seq, row.parent_seq, message)
            if row.role == "toolResult":
                results.append((row.parent_seq, message))
    paths = _paths(session, results, up)
    if paths:
        _save(session, paths)


def count_session(session: ChatSession) -> bool:
    """Count the session's changed files again from all its entries (one stored before the count, or
    appended to by a release that did not keep it); the caller holds the session row. Return whether
    the count was missing or wrong."""
    before = session.files_changed
    up = _Up()
    paths = _paths(session, _stored_results(session, 0, session.next_seq - 1, up), up)
    if before is None:
        ChatSession.with_deleted.filter(pk=session.pk).update(files_changed=0)
        session.files_changed = 0
    _save(session, paths)
    return session.files_changed != before
