"""Move the leaf: directly, or as Pi's tree navigation does (a user message gives back its text)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from django.db import transaction

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor
from pitree.operations import plan_navigation
from pitree.storable import MAX_NAME_CHARS, check_text
from pitree.tree import SessionTree
from sessions_app import access
from sessions_app.models import ChatSession, Entry
from sessions_app.queries import find_entry
from sessions_app.services.errors import InvalidEntries
from sessions_app.verbs import Action

__all__ = ["NavigationOutcome", "navigate_without_summary", "set_leaf"]


@dataclass(frozen=True, slots=True)
class NavigationOutcome:
    """Where the leaf went and the text a user-message target puts back into the editor."""

    leaf_id: str | None
    editor_text: str | None
    changed: bool


def set_leaf(
    *, session: ChatSession, entry_id: str | None, actor: Actor, grant: access.Access | None = None
) -> ChatSession:
    """Move the leaf to an existing entry (or to none). Holds SELECT FOR UPDATE on the session row.

    A step of the navigations (with or without a summary), which log the move themselves.
    """
    access.authorize(actor, session, access.WRITE, grant=grant)
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        if entry_id is None:
            locked.leaf_entry_id, locked.leaf_seq = None, None
        else:
            row = Entry.objects.filter(session=locked, entry_id=entry_id).order_by("-seq").first()
            if row is None:
                raise InvalidEntries(f"Entry {entry_id} not found")
            locked.leaf_entry_id, locked.leaf_seq = row.entry_id, row.seq
        locked.save(update_fields=["leaf_entry_id", "leaf_seq", "updated_at"])
        transaction.on_commit(
            partial(
                realtime.leaf_moved,
                session_id=locked.pk,
                leaf=locked.leaf_entry_id,
                last_seq=locked.next_seq - 1,
            )
        )
    return locked


def navigate_without_summary(
    *, session: ChatSession, target_id: str, actor: Actor, grant: access.Access | None = None
) -> NavigationOutcome:
    """Move the leaf as Pi's tree navigation does: a user message target gives its parent and its text."""
    check_text(target_id, "targetId", max_chars=MAX_NAME_CHARS)
    access.authorize(actor, session, access.WRITE, grant=grant)
    entries = [] if target_id == session.leaf_entry_id else [find_entry(session, target_id).to_domain()]
    plan = plan_navigation(SessionTree(entries), session.leaf_entry_id, target_id)
    with transaction.atomic():
        if plan.changed:
            set_leaf(session=session, entry_id=plan.new_leaf_id, actor=actor, grant=grant)
        record_action(actor=actor, action=Action.NAVIGATE, session=session, target=target_id)
    if plan.changed:
        session.refresh_from_db()
    return NavigationOutcome(plan.new_leaf_id, plan.editor_text, plan.changed)
