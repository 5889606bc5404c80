"""Set or clear an entry's label, as Pi does: a ``label`` entry appended under the leaf."""

from __future__ import annotations

from core.actors import Actor
from pitree.operations import label_entry
from pitree.storable import MAX_NAME_CHARS, check_text
from pitree.tree import SessionTree
from sessions_app import access
from sessions_app.models import ChatSession, Entry
from sessions_app.queries import find_entry
from sessions_app.services.appending import append_entries, under_leaf
from sessions_app.verbs import Action

__all__ = ["set_label"]


def set_label(
    *,
    session: ChatSession,
    target_id: str,
    label: str | None,
    actor: Actor,
    grant: access.Access | None = None,
) -> list[Entry]:
    """Label an entry (an empty label clears it) by appending a ``label`` entry under the leaf."""
    check_text(target_id, "targetId", max_chars=MAX_NAME_CHARS)
    check_text(label, "the label", max_chars=MAX_NAME_CHARS)
    access.authorize(actor, session, access.WRITE, grant=grant)
    target = find_entry(session, target_id)
    # The label needs only to know that its target exists, so a one-entry tree is enough.
    entry = label_entry(SessionTree([target.to_domain()]), None, target_id, label or None)
    return append_entries(
        session=session,
        entries=[under_leaf(entry)],
        actor=actor,
        grant=grant,
        log=Action.LABEL,
        detail={"target": target_id, "label": label or None},
    )
