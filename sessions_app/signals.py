"""Signals of sessions_app: what it sends to other apps, and the receivers that keep sockets honest.

``entries_stored`` is sent inside the transaction that stored entries, so what a receiver writes commits
or rolls back with them (the audit subscribes to it; ``sessions_app`` never imports the audit).
Arguments: ``session``, ``first_seq``, ``last_seq`` (inclusive), and ``rows`` (the new ``Entry`` rows,
or None after a bulk COPY, when a receiver reads the range itself). A receiver connected with
``connect_entries_stored`` names the kinds of entry it acts on; an append holding none of the kinds any
receiver wants is stored without the signal, so its commit can go out with its writes (appends hold the
session lock until they commit).

Open sockets learn of every change to who may read, whatever made it (API, admin, shell, command, ORM),
through one mechanism: after the change commits, the receivers below announce it to a Channels group
every affected socket joined, and each of those sockets re-reads its credentials and grant from the
database and closes when they no longer hold (``consumers.SessionConsumer``). Changes to a link, a share
or the session itself go to the session's group; changes to a user, their tokens, their browser sessions
or their team memberships go to the user's group (``realtime.viewer_group``). The use cases announce
their own changes too; an announcement only makes sockets re-check, so announcing twice costs one extra
check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from core import realtime
from sessions_app.models import ChatSession, SessionShare, ShareLink
from teams.facade import TeamMembership

__all__ = [
    "announce_committed",
    "bookkeeping_checked",
    "connect_entries_stored",
    "costs_wanted",
    "entries_committed",
    "entries_stored",
    "entries_stored_wanted",
    "link_opened",
    "session_shared",
    "sharing_requested",
]

entries_stored = Signal()

# After the commit of every entry write, whatever the path (both store backends, import by COPY):
# ``session_id``, ``first_seq``, ``last_seq`` and ``rows`` (the stored ``Entry`` rows, or None after a
# COPY). Receivers run outside the write's transaction and lock (the secret scan listens here).
entries_committed = Signal()

# Before a session is shared with a team or by a new link: ``session``, ``team`` (None for a link),
# ``actor``. A receiver refuses by raising ``services.errors.SharingRefused`` (a team policy does).
sharing_requested = Signal()

# A session was newly shared with a team, after the share committed: ``session``, ``team``, ``actor``,
# ``access`` (the hooks app tells the team's hooks).
session_shared = Signal()

# A readable export asks what its assistant messages cost: ``session`` and ``seqs``. A receiver answers
# {seq: dollars} (the costs app, which sessions_app never imports); without one, Pi's recorded costs stand.
costs_wanted = Signal()

# ``manage.py reconcile`` checks a session written by the previous release during an upgrade:
# ``session_id``. Each app that keeps rows per entry (costs, the usage rollup) compares them with the
# session's entries and repairs them in a transaction holding the session row, answering a short name
# of what it repaired, or None when they were right.
bookkeeping_checked = Signal()

# A share link was used: ``link``, ``user`` (None when anonymous) and ``via`` ("page" or "api"). Sent on
# every use; receivers coalesce (the view log counts page opens and API sessions, not requests).
link_opened = Signal()


def announce_committed(session_id: int, first_seq: int, last_seq: int, rows: Any = None) -> None:
    """Send ``entries_committed``; call it once the write has committed (``transaction.on_commit``)."""
    if entries_committed.receivers:
        entries_committed.send(
            ChatSession, session_id=session_id, first_seq=first_seq, last_seq=last_seq, rows=rows
        )


# (type, role) pairs each receiver acts on, by dispatch_uid; a role of "" stands for any role.
_acts_on: dict[str, frozenset[tuple[str, str]]] = {}


def connect_entries_stored(
    receiver: Callable[..., None], *, dispatch_uid: str, acts_on: Iterable[tuple[str, str]]
) -> None:
    """Connect a receiver of ``entries_stored`` that acts only on entries of the given (type, role)."""
    _acts_on[dispatch_uid] = frozenset(acts_on)
    entries_stored.connect(receiver, dispatch_uid=dispatch_uid)


def entries_stored_wanted(kinds: Iterable[tuple[str, str]]) -> bool:
    """Return whether a receiver acts on a batch holding these (type, role) kinds of entry.

    A receiver connected without naming its kinds (plain ``connect``) wants every batch.
    """
    kinds = set(kinds)
    for (uid, _sender), *_ in entries_stored.receivers:
        wanted = _acts_on.get(uid) if isinstance(uid, str) else None
        if wanted is None or any((kind, role) in wanted or (kind, "") in wanted for kind, role in kinds):
            return True
    return False


def _announce(session_id: int, event: str, **fields: Any) -> None:
    transaction.on_commit(partial(realtime.broadcast, session_id, event, **fields))


def _announce_to_user(user_id: int | None, ended: str | None = None) -> None:
    if user_id is not None:
        transaction.on_commit(partial(realtime.access_changed, user_id=user_id, ended=ended))


@receiver(post_save, sender=ChatSession, dispatch_uid="piweb-chat-session-saved")
@receiver(post_delete, sender=ChatSession, dispatch_uid="piweb-chat-session-deleted")
def chat_session_gone(sender: Any, instance: ChatSession, update_fields: Any = None, **kwargs: Any) -> None:
    """A session hidden or deleted by any means (the use case announces its own): its sockets close."""
    deleted = kwargs.get("signal") is post_delete or (
        instance.deleted_at is not None and (update_fields is None or "deleted_at" in update_fields)
    )
    if deleted:
        _announce(instance.pk, "access_changed")


@receiver(post_save, sender=ShareLink, dispatch_uid="piweb-link-saved")
@receiver(post_delete, sender=ShareLink, dispatch_uid="piweb-link-deleted")
def link_changed(sender: Any, instance: ShareLink, created: bool = False, **kwargs: Any) -> None:
    """A revoked, re-dated or deleted link: its sockets re-check (and close if it no longer works)."""
    if not created:
        _announce(instance.session_id, "link_revoked", link=instance.pk)


@receiver(post_save, sender=SessionShare, dispatch_uid="piweb-share-saved")
@receiver(post_delete, sender=SessionShare, dispatch_uid="piweb-share-deleted")
def share_changed(sender: Any, instance: SessionShare, created: bool = False, **kwargs: Any) -> None:
    if not created:
        _announce(instance.session_id, "access_changed")


@receiver(post_save, sender=TeamMembership, dispatch_uid="piweb-member-saved")
@receiver(post_delete, sender=TeamMembership, dispatch_uid="piweb-member-deleted")
def membership_changed(sender: Any, instance: TeamMembership, created: bool = False, **kwargs: Any) -> None:
    """A member removed or given another role: that member's sockets re-check (nobody else's changed)."""
    if not created:
        _announce_to_user(instance.user_id)
