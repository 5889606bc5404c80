"""When a credential stops working (a token revoked, a password changed, a user deactivated or deleted, a
browser signed out), every web process forgets it at once and the sockets it opened re-check or close."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts_app.authentication import forget_all_tokens
from core import realtime
from sessions_app.facade import ApiToken


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
