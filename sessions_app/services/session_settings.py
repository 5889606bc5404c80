"""A session's own settings: today its compaction settings, which override the server's for it alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from actionlog.facade import record_action
from core.actors import Actor
from sessions_app import access
from sessions_app.models import ChatSession
from sessions_app.services.errors import InvalidEntries
from sessions_app.verbs import Action

__all__ = ["COMPACTION_KEYS", "set_compaction_settings"]

COMPACTION_KEYS = ("enabled", "reserveTokens", "keepRecentTokens")
_MAX_SAFE_INTEGER = 2**53 - 1


def _clean(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Keep the given keys; refuse unknown ones and values Pi's settings would refuse."""
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise InvalidEntries("compaction settings must be an object")
    unknown = sorted(set(values) - set(COMPACTION_KEYS))
    if unknown:
        raise InvalidEntries(f"unknown compaction setting(s): {', '.join(unknown)}")
    cleaned: dict[str, Any] = {}
    for key in COMPACTION_KEYS:
        value = values.get(key)
        if value is None:
            continue
        if key == "enabled":
            if not isinstance(value, bool):
                raise InvalidEntries("enabled must be true or false")
        elif isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_SAFE_INTEGER:
            raise InvalidEntries(f"{key} must be a non-negative integer, got {value!r}")
        cleaned[key] = value
    return cleaned or None


def set_compaction_settings(
    *,
    session: ChatSession,
    values: Mapping[str, Any] | None,
    actor: Actor,
    grant: access.Access | None = None,
) -> ChatSession:
    """Set this session's compaction settings (None or {} clears them: the server's apply again)."""
    access.authorize(actor, session, access.WRITE, grant=grant)
    cleaned = _clean(values)
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        locked.compaction_settings = cleaned
        locked.save(update_fields=["compaction_settings", "updated_at"])
        record_action(actor=actor, action=Action.SETTINGS, session=locked, compaction=cleaned)
    session.compaction_settings = cleaned
    return session
