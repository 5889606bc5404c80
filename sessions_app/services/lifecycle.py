"""Create, rename and delete sessions."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from .. import access, realtime
from ..domain.jsonl import CURRENT_VERSION
from ..domain.operations import new_session_id, session_info_entry
from ..domain.storable import MAX_NAME_CHARS, MAX_PARAM_CHARS, check_text
from ..domain.timestamps import now_iso
from ..domain.tree import SessionTree, js_trim
from ..models import ChatSession
from .actions import Action, record_action
from .appending import append_entries, under_leaf
from .rows import create_session_row

__all__ = ["create_session", "delete_session", "rename_session"]


def create_session(*, owner: Any, cwd: str, name: str | None = None) -> ChatSession:
    """Create an empty session with a fresh header; a name becomes its first ``session_info`` entry."""
    check_text(cwd, "the cwd", max_chars=MAX_PARAM_CHARS)
    check_text(name, "the name", max_chars=MAX_NAME_CHARS)
    header = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": new_session_id(),
        "timestamp": now_iso(),
        "cwd": cwd,
    }
    # Built before anything is written, so an unusable name stores nothing.
    info = session_info_entry(SessionTree([]), None, name) if name is not None and js_trim(name) else None
    with transaction.atomic():
        session = create_session_row(owner=owner, header=header, filename="")
        if info is not None:
            append_entries(session=session, entries=[under_leaf(info)])
    return session


def rename_session(
    *, session: ChatSession, name: str, actor: Any = None, grant: access.Access | None = None
) -> ChatSession:
    """Name the session by appending a ``session_info`` entry under the leaf (Pi's ``set_session_name``)."""
    check_text(name, "the name", max_chars=MAX_NAME_CHARS)
    access.authorize(actor, session, access.WRITE, grant=grant)
    entry = session_info_entry(SessionTree([]), None, name)
    append_entries(session=session, entries=[under_leaf(entry)])
    return session


def delete_session(*, session: ChatSession, actor: Any = None, grant: access.Access | None = None) -> None:
    """Delete the session with all its entries (its owner only); the action log keeps its label."""
    access.authorize(actor, session, access.OWNER, grant=grant)
    session_id = session.pk
    with transaction.atomic():
        if actor is not None:
            record_action(actor=actor, action=Action.DELETE, session=session)
        ChatSession.objects.filter(pk=session_id).delete()
        transaction.on_commit(partial(realtime.broadcast, session_id, "session_deleted"))
