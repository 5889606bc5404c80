"""Signals of sessions_app: what it sends to other apps, and the receivers that keep sockets honest.

``entries_stored`` is sent inside the transaction that stored entries, so what a receiver writes commits
or rolls back with them (the audit subscribes to it; ``sessions_app`` never imports the audit).
Arguments: ``session``, ``first_seq``, ``last_seq`` (inclusive), and ``rows`` (the new ``Entry`` rows,
or None after a bulk COPY, when a receiver reads the range itself). A receiver connected with
``connect_entries_stored`` names the kinds of entry it acts on; an append holding none of the kinds any
receiver wants is stored without the signal, so its commit can go out with its writes (appends hold the
session lock until they commit).

Open sockets learn of every change to who may read, whatever made it (API, admin, shell, ORM). The use
cases announce their own changes too; these receivers cover everything else. An announcement only makes
the session's sockets re-check their access, so announcing twice costs one extra check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from . import realtime
from .api.authentication import forget_all_tokens
from .models import ApiToken, SessionShare, ShareLink, TeamMembership

__all__ = ["connect_entries_stored", "entries_stored", "entries_stored_wanted"]

entries_stored = Signal()

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


@receiver(post_delete, sender=ApiToken, dispatch_uid="piweb-token-deleted")
def token_deleted(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    """A revoked or expired token stops working at once, in every web process."""
    forget_all_tokens()


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="piweb-token-user-saved")
def token_user_saved(
    sender: Any, instance: Any, created: bool = False, update_fields: Any = None, **kwargs: Any
) -> None:
    """A deactivated user (or one with a new password) is looked up afresh on the next request."""
    # A sign-in only stamps last_login, which no token check reads.
    if not created and set(update_fields or ()) != {"last_login"}:
        forget_all_tokens()


def _announce(session_id: int, event: str, **fields: Any) -> None:
    transaction.on_commit(partial(realtime.broadcast, session_id, event, **fields))


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
    """A member removed or given another role: every session shared with the team re-checks."""
    if created:
        return
    for session_id in SessionShare.objects.filter(team_id=instance.team_id).values_list(
        "session_id", flat=True
    ):
        _announce(session_id, "access_changed")
