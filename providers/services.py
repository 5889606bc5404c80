"""Configuring the model providers runs and summaries use: staff only, each change logged.

The log names the fields changed, never the values of secrets: a changed key is logged as ``api_key``.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from actionlog.facade import record_action
from core.actors import Actor
from core.errors import InvalidSharing
from core.staff import authorize_staff
from providers.models import LLMProvider
from providers.verbs import Action

__all__ = ["delete_provider", "save_provider"]

# Logged with their values: what a provider is and where it answers, never its key.
_SHOWN = ("name", "api", "provider", "model_id", "base_url")


def save_provider(*, actor: Actor, provider: LLMProvider) -> LLMProvider:
    """Create ``provider`` (unsaved) or save its changes; staff with the admin's right.

    The log lists the fields whose stored value changed (the key by name only).
    """
    creating = provider.pk is None
    authorize_staff(actor, "providers.add_llmprovider" if creating else "providers.change_llmprovider")
    try:
        with transaction.atomic():
            stored = (
                None if creating else LLMProvider.objects.select_for_update().filter(pk=provider.pk).first()
            )
            changed = [
                f.name
                for f in LLMProvider._meta.concrete_fields
                if f.name not in ("id", "created_at", "updated_at")
                and (stored is None or getattr(stored, f.attname) != getattr(provider, f.attname))
            ]
            if stored is not None and not changed:
                return provider
            provider.save()
            record_action(
                actor=actor,
                action=Action.PROVIDER_CREATE if creating else Action.PROVIDER_CHANGE,
                session=None,
                **{name: getattr(provider, name) for name in _SHOWN},
                changed=changed,
            )
    except IntegrityError:
        # Two staff saving one name, or two defaults, at once: the form checked both before.
        raise InvalidSharing(
            "name", "Another provider has this name, or is the summarizer default."
        ) from None
    return provider


def delete_provider(*, actor: Actor, provider: LLMProvider) -> None:
    """Delete a provider; runs that used it keep their records (their link to it is cleared)."""
    authorize_staff(actor, "providers.delete_llmprovider")
    with transaction.atomic():
        record_action(
            actor=actor,
            action=Action.PROVIDER_DELETE,
            session=None,
            **{name: getattr(provider, name) for name in _SHOWN},
        )
        provider.delete()
