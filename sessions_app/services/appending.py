"""Append Pi entries to a session: the one write path of the API's append, runs, summaries and labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from .. import access
from ..actors import Actor
from ..domain.entries import entry_from_value
from ..domain.jsjson import js_stringify
from ..domain.jsonl import generate_entry_id
from ..domain.storable import check_json
from ..domain.timestamps import now_iso
from ..models import ChatSession, Entry
from . import leaf_append
from .actions import Action, PendingAction
from .errors import AppendConflict, InvalidEntries
from .rows import append_rows

__all__ = ["append_entries", "under_leaf"]

# What an append changes on the session row, copied back to the caller's instance without a re-read.
_COUNTERS = (
    "leaf_entry_id",
    "leaf_seq",
    "next_seq",
    "next_segment",
    "entry_count",
    "message_count",
    "name",
    "updated_at",
)


def append_entries(
    *,
    session: ChatSession,
    entries: Sequence[dict[str, Any]],
    actor: Actor,
    expected_leaf: object = ...,
    grant: access.Access | None = None,
    log: str | None = Action.APPEND,
    detail: Mapping[str, Any] | None = None,
) -> list[Entry]:
    """Append Pi entries in order, holding the session row's lock until they commit.

    An entry without ``parentId`` hangs under the leaf (the first of a batch) or the entry before it; an
    explicit ``parentId`` must name an entry of this session (or be null for a new root). Ids must be new.
    The leaf moves to the last entry appended. A chain (see ``leaf_append``) is stored in one locked
    round trip; other batches read what they need under the lock. ``actor`` must be allowed to write
    (``grant``: what the adapter already resolved for it).

    The append is logged as ``log`` (with ``detail``) in its own transaction: an API append, a rename,
    a label. ``None`` is for appends that are a step of a use case logged on its own (a run's turns, a
    compaction's entry, a new session's name).
    """
    if not entries:
        raise InvalidEntries("no entries to append")
    access.authorize(actor, session, access.WRITE, grant=grant)
    facts = dict(detail) if detail is not None else {"entries": len(entries)}
    pending = PendingAction(actor, log, facts) if log is not None else None
    if leaf_append.eligible(entries):
        return leaf_append.append_chain(session, entries, expected_leaf, log=pending)
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        if expected_leaf is not ... and expected_leaf != locked.leaf_entry_id:
            raise AppendConflict(
                expected_leaf if isinstance(expected_leaf, str) else None, locked.leaf_entry_id
            )
        prepared = _prepare_new_entries(locked, entries)
        rows = append_rows(
            locked,
            [entry_from_value(0, p) for p in prepared],
            [js_stringify(p) for p in prepared],
            move_leaf=True,
        )
        if pending is not None:
            pending.write(locked)
    for name in _COUNTERS:
        setattr(session, name, getattr(locked, name))
    return rows


def under_leaf(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop id and parent so ``append_entries`` hangs the entry under the leaf it holds locked."""
    return {k: v for k, v in entry.items() if k not in ("id", "parentId")}


def _prepare_new_entries(session: ChatSession, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate entries and fill in id, parentId and timestamp in Pi's key order. Caller holds the lock."""
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidEntries(f"entry {index}: an entry must be a JSON object")
        # Content strings are stored escaped in the verbatim line, as an import stores them; only depth
        # (and, in append_rows, the extracted columns) can make an entry unstorable.
        check_json(entry, f"entry {index}", strings=False)
    wanted = {e["id"] for e in entries if isinstance(e.get("id"), str)}
    wanted |= {e["parentId"] for e in entries if isinstance(e.get("parentId"), str)}
    if session.leaf_entry_id is not None:
        wanted.add(session.leaf_entry_id)
    # One query answers every "does this id exist here?" question of the batch.
    known = set(_existing_ids(session, wanted))
    generated = _new_ids(session, sum(1 for e in entries if e.get("id") is None), avoid=known | wanted)
    leaf = session.leaf_entry_id
    batch: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        prepared = _prepare_one(entry, f"entry {index}", leaf, known, batch, generated)
        out.append(prepared)
        batch.add(prepared["id"])
        leaf = prepared["id"]
    return out


def _prepare_one(
    entry: dict[str, Any],
    where: str,
    leaf: str | None,
    known: set[str],
    batch: set[str],
    generated: list[str],
) -> dict[str, Any]:
    kind = entry.get("type")
    if not isinstance(kind, str) or not kind or kind == "session":
        raise InvalidEntries(f"{where}: 'type' must be a non-empty string other than 'session'")
    entry_id = entry.get("id")
    if entry_id is None:
        entry_id = generated.pop()
    elif not isinstance(entry_id, str) or not entry_id:
        raise InvalidEntries(f"{where}: 'id' must be a non-empty string")
    elif entry_id in known or entry_id in batch:
        raise InvalidEntries(f"{where}: id {entry_id!r} already exists in this session")
    parent = entry.get("parentId", leaf)
    if parent is not None and not isinstance(parent, str):
        raise InvalidEntries(f"{where}: 'parentId' must be a string or null")
    if parent is not None and parent not in batch and parent not in known:
        raise InvalidEntries(f"{where}: parent {parent!r} is not an entry of this session")
    stamp = entry.get("timestamp")
    if stamp is None:
        stamp = now_iso()
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **rest}


def _existing_ids(session: ChatSession, ids: set[str]) -> list[str]:
    if not ids:
        return []
    return list(Entry.objects.filter(session=session, entry_id__in=ids).values_list("entry_id", flat=True))


def _new_ids(session: ChatSession, count: int, *, avoid: set[str]) -> list[str]:
    """Return ``count`` fresh 8-hex ids that no entry of the session has."""
    fresh: list[str] = []
    while len(fresh) < count:
        candidates = set()
        while len(candidates) < count - len(fresh):
            candidates.add(generate_entry_id(avoid | candidates | set(fresh)))
        taken = set(_existing_ids(session, candidates))
        fresh += [c for c in candidates if c not in taken]
        avoid |= taken
    return fresh
