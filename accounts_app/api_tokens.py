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
        token, text = ApiToken.objects.create(user=user, name=name[:100])
        record_action(
            actor=actor, action=Action.TOKEN_CREATE, session=None, token=token.token_key, name=token.name
        )
    return token, text


def revoke_api_token(*, actor: Actor, user: Any, token_key: str, as_staff: bool = False) -> None:
    """Revoke one of ``user``'s tokens at once; NotVisible if they have none with that id.

    ``as_staff``: a staff member with the admin's delete right revokes someone else's token.
    """
    _authorize(actor, user, as_staff=as_staff)
    with transaction.atomic():
        deleted, _ = ApiToken.objects.filter(user=user, token_key=token_key).delete()
        if not deleted:
            raise access.NotVisible(f"Token not found: {token_key}")
        record_action(actor=actor, action=Action.TOKEN_REVOKE, session=None, token=token_key)


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
