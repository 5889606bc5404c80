"""Branch a session into a new one: fork (before a user message or at any entry) and clone (a path)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from actionlog.facade import record_action
from core.actors import Actor, user_of
from pitree.entries import entry_from_value
from pitree.jsjson import js_stringify
from pitree.operations import ForkMode, copy_for_fork, fork_plan
from pitree.searchable import search_text
from sessions_app import access, link_scope
from sessions_app.attribution import author_of
from sessions_app.models import ChatSession, Entry
from sessions_app.queries import find_entry, load_tree
from sessions_app.services.errors import InvalidEntries
from sessions_app.services.exporting import pi_session_path
from sessions_app.services.rows import create_session_row
from sessions_app.services.store import entry_store, line_bytes
from sessions_app.verbs import Action

__all__ = ["PATH_ONLY", "ForkOutcome", "clone_session", "fork_session"]

PATH_ONLY = "This link shares part of the session: fork the path only."


@dataclass(frozen=True, slots=True)
class ForkOutcome:
    """The new session and the forked user message's text (forks before a user message only)."""

    session: ChatSession
    editor_text: str | None


def fork_session(
    *,
    session: ChatSession,
    entry_id: str,
    actor: Actor,
    position: str | None = None,
    mode: ForkMode = "path",
    grant: access.Access | None = None,
) -> ForkOutcome:
    """Create a session for ``actor`` from ``entry_id``: before a user message (its text to the editor) or
    at any entry. Reading the source is enough; a link that shows part of it forks the path only.

    Without a position, user messages fork before and everything else at the entry.
    """
    grant = access.authorize(actor, session, access.READ, grant=grant)
    grant.entry(entry_id)  # an unknown or hidden id is "not found", before the whole tree is read
    if grant.restricted and mode != "path":
        raise access.Forbidden(PATH_ONLY)
    tree = link_scope.visible_tree(grant) if grant.restricted else load_tree(session)
    if position is None:
        target = tree.get(entry_id)
        is_user = target is not None and target.type == "message" and target.role == "user"
        position = "before" if is_user else "at"
    plan = fork_plan(tree, entry_id, "at" if position == "at" else "before")
    branched = copy_for_fork(
        tree, plan.target_leaf_id, mode=mode, cwd=session.cwd, parent_session=pi_session_path(session)
    )
    new = _store_branched(
        branched.header, branched.entries, branched.leaf_id, session, entry_id, actor, Action.FORK
    )
    return ForkOutcome(new, plan.selected_text)


def clone_session(
    *,
    session: ChatSession,
    actor: Actor,
    entry_id: str | None = None,
    grant: access.Access | None = None,
) -> ChatSession:
    """Create a session holding the path to ``entry_id`` (default: the leaf this viewer sees)."""
    grant = access.authorize(actor, session, access.READ, grant=grant)
    leaf = entry_id if entry_id is not None else grant.leaf_id()
    if leaf is None:
        raise InvalidEntries("Cannot clone session: no current entry selected")
    grant.entry(leaf) if grant.restricted else find_entry(session, leaf)
    # Through a frozen or path link only what the link shows is copied, labels included.
    tree = link_scope.visible_tree(grant) if grant.restricted else load_tree(session)
    branched = copy_for_fork(
        tree, leaf, mode="path", cwd=session.cwd, parent_session=pi_session_path(session)
    )
    return _store_branched(
        branched.header, branched.entries, branched.leaf_id, session, leaf, actor, Action.CLONE
    )


def _authors(source: ChatSession, entries: list[dict[str, Any]]) -> dict[str, int | None]:
    """Return the author of each copied entry in the source (entry id → author row; the newest wins)."""
    wanted = {e.get("id") for e in entries}
    rows = Entry.objects.filter(session=source, entry_id__isnull=False).order_by("seq")
    return {
        eid: author
        for eid, author in rows.values_list("entry_id", "author_id")
        if eid is not None and eid in wanted
    }


def _store_branched(
    header: dict[str, Any],
    entries: list[dict[str, Any]],
    leaf_id: str | None,
    source: ChatSession,
    entry_id: str,
    actor: Actor,
    action: str,
) -> ChatSession:
    """Store the branched copy as a new session of ``actor`` and log it on the source, in one transaction."""
    owner = user_of(actor)
    if owner is None:  # a session belongs to a user: a link holder signs in to fork
        raise access.NotSignedIn()
    with transaction.atomic():
        new = create_session_row(owner=owner, header=header, filename="")
        # Set before the copies are stored: the usage receivers of ``entries_stored`` read it.
        new.copied_entries = len(entries)
        raws = [js_stringify(e) for e in entries]
        # Copies of stored entries: the owner's quota applies, the field caps were applied when stored.
        entry_store().insert_all(
            new,
            [entry_from_value(seq, e) for seq, e in enumerate(entries)],
            [(raw, e.get("timestamp"), search_text(e)) for raw, e in zip(raws, entries, strict=True)],
            size=sum(line_bytes(raw) for raw in raws),
            checked=False,
            # A copy keeps who wrote each entry; what the copy adds (re-created labels) is the copier's.
            author=author_of(actor),
            copied_authors=_authors(source, entries),
        )
        # Copy modes other than "path" keep file order, so the leaf need not be the last entry.
        leaf_seq = next((s for s in range(len(entries) - 1, -1, -1) if entries[s].get("id") == leaf_id), None)
        new.leaf_entry_id = leaf_id if leaf_seq is not None else None
        new.leaf_seq = leaf_seq
        new.forked_from = source
        new.forked_from_entry = entry_id
        new.forked_by = owner
        new.save()
        record_action(actor=actor, action=action, session=source, entry=entry_id, new_session=new.pk)
    return new
