"""Create, rename and delete sessions."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, user_of
from pitree.jsonl import CURRENT_VERSION
from pitree.operations import new_session_id, session_info_entry
from pitree.storable import MAX_NAME_CHARS, MAX_PARAM_CHARS, check_text
from pitree.timestamps import now_iso
from pitree.tree import SessionTree, js_trim
from sessions_app import access
from sessions_app.models import ChatSession
from sessions_app.services.appending import append_entries, under_leaf
from sessions_app.services.purging import purge_session, queue_purge
from sessions_app.services.rows import create_session_row
from sessions_app.verbs import Action

__all__ = ["create_session", "delete_owner", "delete_session", "rename_session"]


def create_session(*, actor: Actor, cwd: str, name: str | None = None) -> ChatSession:
    """Create an empty session for ``actor`` (a signed-in user) with a fresh header; a name becomes its
    first ``session_info`` entry. Logged as ``create``."""
    check_text(cwd, "the cwd", max_chars=MAX_PARAM_CHARS)
    check_text(name, "the name", max_chars=MAX_NAME_CHARS)
    owner = _signed_in(actor)
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
            append_entries(session=session, entries=[under_leaf(info)], actor=actor, log=None)
        record_action(actor=actor, action=Action.CREATE, session=session, cwd=cwd)
    return session


def rename_session(
    *, session: ChatSession, name: str, actor: Actor, grant: access.Access | None = None
) -> ChatSession:
    """Name the session by appending a ``session_info`` entry under the leaf (Pi's ``set_session_name``)."""
    check_text(name, "the name", max_chars=MAX_NAME_CHARS)
    access.authorize(actor, session, access.WRITE, grant=grant)
    entry = session_info_entry(SessionTree([]), None, name)
    append_entries(
        session=session,
        entries=[under_leaf(entry)],
        actor=actor,
        grant=grant,
        log=Action.RENAME,
        detail={"name": name},
    )
    return session


def _signed_in(actor: Actor) -> Any:
    """Return the user a new session belongs to: only a signed-in user owns sessions."""
    user = user_of(actor)
    if user is None:
        raise access.NotSignedIn()
    return user


def delete_session(
    *, session: ChatSession, actor: Actor, grant: access.Access | None = None, as_staff: bool = False
) -> None:
    """Delete the session (its owner only): gone for everyone at once, its rows purged in the background.

    One short transaction hides it (``deleted_at``: every list, page, link, search, sync and socket check
    goes through ``ChatSession.objects``, which leaves it out), logs the action with the session's label
    and unlinks its forks. After commit its viewers hear ``session_deleted`` and the purge is queued
    (``services.purging``), which deletes the entries in batches however many there are.

    ``as_staff``: the actor deletes from the admin site instead of as the owner; they need the staff
    flag and the right to delete sessions, and the row says ``by_staff``.
    """
    if as_staff:
        _authorize_staff(actor)
    else:
        access.authorize(actor, session, access.OWNER, grant=grant)
    session_id = session.pk
    with transaction.atomic():
        # The lock makes an append in flight finish first, or find the session gone once it gets the row.
        locked = ChatSession.objects.select_for_update().filter(pk=session_id).first()
        if locked is None:
            raise access.NotVisible(f"Session not found: {session_id}")
        extra: dict[str, Any] = {"by_staff": True} if as_staff else {}
        record_action(actor=actor, action=Action.DELETE, session=locked, **extra)
        ChatSession.objects.filter(pk=session_id).update(deleted_at=timezone.now())
        # Forks stop naming a parent nobody can open any more, as the purge would leave them anyway.
        ChatSession.with_deleted.filter(forked_from_id=session_id).update(forked_from=None)
        transaction.on_commit(partial(realtime.broadcast, session_id, "session_deleted"))
        transaction.on_commit(partial(queue_purge, session_id))


def _authorize_staff(actor: Actor, model: Any = ChatSession) -> None:
    """Refuse unless the actor is staff allowed to delete ``model`` rows (the admin checked; so do we)."""
    user = user_of(actor)
    if user is None:
        raise access.NotSignedIn()
    meta = model._meta
    if not (user.is_staff and user.has_perm(f"{meta.app_label}.delete_{meta.model_name}")):
        raise access.Forbidden(
            "Only staff with the right to delete them may delete others' sessions or users."
        )


def delete_owner(*, owner: Any, actor: Actor) -> int:
    """Delete a user and every session they own (staff only); return how many sessions went with them.

    Each session goes as ``delete_session`` deletes it (hidden at once, logged with the staff ``actor``),
    then its rows are purged here batch by batch (each purge logged), so memory stays flat and no
    transaction holds a whole session; what is left of the user is small enough for Django's cascade.
    Run again after a failure, it finishes the job.
    """
    _authorize_staff(actor, get_user_model())
    for session in ChatSession.objects.filter(owner=owner):
        delete_session(session=session, actor=actor, as_staff=True)
    purged = 0
    for session_id in ChatSession.with_deleted.filter(owner=owner).values_list("pk", flat=True):
        purged += purge_session(session_id, actor=actor)
    owner.delete()
    return purged
