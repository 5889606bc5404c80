"""Append Pi entries to a session: the one write path of the API's append, runs, summaries and labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actionlog.facade import PendingAction
from core.actors import Actor
from sessions_app import access
from sessions_app.attribution import Author, author_of
from sessions_app.models import ChatSession, Entry
from sessions_app.services.errors import InvalidEntries
from sessions_app.services.store import entry_store
from sessions_app.verbs import Action

__all__ = ["append_entries", "under_leaf"]


def append_entries(
    *,
    session: ChatSession,
    entries: Sequence[dict[str, Any]],
    actor: Actor,
    expected_leaf: object = ...,
    grant: access.Access | None = None,
    log: str | None = Action.APPEND,
    detail: Mapping[str, Any] | None = None,
    quota: bool = True,
    author: Author | None = None,
) -> list[Entry]:
    """Append Pi entries in order, holding the session row's lock until they commit.

    An entry without ``parentId`` hangs under the leaf (the first of a batch) or the entry before it; an
    explicit ``parentId`` must name an entry of this session (or be null for a new root). Ids must be new.
    The leaf moves to the last entry appended. Validation and placement are the domain's
    (``domain.placement``), storage the entry store's (``store``), which also enforces the quotas;
    ``quota=False`` lets a run finish the turn it started (see ``agent.loop``). ``actor`` must be
    allowed to write (``grant``: what the adapter already resolved for it).

    The append is logged as ``log`` (with ``detail``) in its own transaction: an API append, a rename,
    a label. ``None`` is for appends that are a step of a use case logged on its own (a run's turns, a
    compaction's entry, a new session's name).

    The entries are recorded as written by ``author``, by default the actor itself (a run names the run
    and the user who started it; an API request the token it came with).
    """
    if not entries:
        raise InvalidEntries("no entries to append")
    access.authorize(actor, session, access.WRITE, grant=grant)
    facts = dict(detail) if detail is not None else {"entries": len(entries)}
    pending = PendingAction(actor, log, facts) if log is not None else None
    return entry_store().append(
        session,
        entries,
        author=author if author is not None else author_of(actor),
        expected_leaf=expected_leaf,
        quota=quota,
        log=pending,
    )


def under_leaf(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop id and parent so ``append_entries`` hangs the entry under the leaf it holds locked."""
    return {k: v for k, v in entry.items() if k not in ("id", "parentId")}
