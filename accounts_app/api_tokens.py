"""API tokens: create (the text is shown once) and revoke, each logged."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from accounts_app.verbs import Action
from actionlog.facade import record_action
from core.actors import Actor, SystemActor, user_of
from sessions_app.facade import ApiToken, access

__all__ = ["create_api_token", "revoke_api_token"]


def create_api_token(*, actor: Actor, user: Any, name: str = "") -> tuple[ApiToken, str]:
    """Create a token for ``user`` (themselves, or a command for them); return it and its text."""
    _authorize(actor, user)
    with transaction.atomic():
        while True:
            token, text = ApiToken.objects.create(user=user, name=name[:100])
            # The short id names one token of the user's: a new one sharing it (one chance in 2^32 per
            # token they hold) is drawn again.
            if not _mine(user, token.public_id).exclude(digest=token.digest).exists():
                break
            token.delete()
        record_action(
            actor=actor, action=Action.TOKEN_CREATE, session=None, token=token.public_id, name=token.name
        )
    return token, text


def revoke_api_token(*, actor: Actor, user: Any, token_id: str, as_staff: bool = False) -> None:
    """Revoke one of ``user``'s tokens at once; NotVisible unless exactly one has that id.

    ``token_id`` is the token's id as lists show it, or any longer start of the token (the admin's
    ``token_key``). ``as_staff``: a staff member with the admin's delete right revokes someone else's.
    """
    _authorize(actor, user, as_staff=as_staff)
    with transaction.atomic():
        matching = list(_mine(user, token_id)[:2]) if len(token_id) >= ApiToken.ID_CHARS else []
        if len(matching) != 1:
            raise access.NotVisible(f"Token not found: {token_id}")
        (token,) = matching
        token.delete()
        record_action(actor=actor, action=Action.TOKEN_REVOKE, session=None, token=token.public_id)


def _mine(user: Any, token_id: str) -> Any:
    """``user``'s tokens whose text starts with ``token_id``."""
    return ApiToken.objects.filter(user=user, token_key__startswith=token_id)


def _authorize(actor: Actor, user: Any, *, as_staff: bool = False) -> None:
    """Only users manage their own tokens; the server's commands may mint them for anyone."""
    if isinstance(actor, SystemActor):
        return
    me = user_of(actor)
    if me is None:
        raise access.NotSignedIn()
    if as_staff and me.is_staff and me.has_perm("sessions_app.delete_apitoken"):
        return
    if me.pk != user.pk:
        raise access.Forbidden("You may only manage your own API tokens.")
