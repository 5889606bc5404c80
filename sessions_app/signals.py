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

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from sessions_app import realtime
from sessions_app.api.authentication import forget_all_tokens
from sessions_app.models import ApiToken, ChatSession, SessionShare, ShareLink, TeamMembership

__all__ = [
    "announce_committed",
    "connect_entries_stored",
    "entries_committed",
    "entries_stored",
    "entries_stored_wanted",
    "link_opened",
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


@receiver(post_delete, sender=ApiToken, dispatch_uid="piweb-token-deleted")
def token_deleted(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    """A revoked or expired token stops working at once, in every web process, and its sockets close."""
    forget_all_tokens()
    _announce_to_user(instance.user_id, realtime.credential_tag(instance.digest))


@receiver(post_save, sender=ApiToken, dispatch_uid="piweb-token-saved")
def token_saved(sender: Any, instance: ApiToken, created: bool = False, **kwargs: Any) -> None:
    """A token given another expiry: its sockets adopt it (and close if it has passed)."""
    if not created:
        _announce_to_user(instance.user_id)


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="piweb-token-user-saved")
def token_user_saved(
    sender: Any, instance: Any, created: bool = False, update_fields: Any = None, **kwargs: Any
) -> None:
    """A deactivated user (or one with a new password) is looked up afresh on the next request, and
    their sockets re-check: a deactivated user's all close, a new password closes other browsers'."""
    # A sign-in only stamps last_login, which no token check reads.
    if not created and set(update_fields or ()) != {"last_login"}:
        forget_all_tokens()
        _announce_to_user(instance.pk)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="piweb-user-deleted")
def user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _announce_to_user(instance.pk)


@receiver(user_logged_out, dispatch_uid="piweb-logged-out")
def logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Signing out closes the sockets of that browser session only (its other browsers stay open)."""
    key = getattr(getattr(request, "session", None), "session_key", None)
    if user is not None and key:
        _announce_to_user(user.pk, realtime.credential_tag(key))


@receiver(post_delete, sender=Session, dispatch_uid="piweb-browser-session-deleted")
def browser_session_deleted(sender: Any, instance: Session, **kwargs: Any) -> None:
    """A browser session deleted by any means (sign-out, ``clearsessions``, the shell) closes its sockets."""
    try:
        user_id = instance.get_decoded().get("_auth_user_id")
    except Exception:  # an undecodable session signs nobody in
        return
    if user_id is not None:
        _announce_to_user(int(user_id), realtime.credential_tag(instance.session_key))


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
