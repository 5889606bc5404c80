"""The action log: one row per user action, written inside the transaction of the action it records."""

from __future__ import annotations

from typing import Any

from ..models import ActionLog, ChatSession

__all__ = ["Action", "record_action"]

Action = ActionLog.Action


def record_action(*, actor: Any, action: str, session: ChatSession | None, **detail: Any) -> ActionLog:
    """Append one line to the action log; call it inside the use case's transaction."""
    return ActionLog.objects.create(
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        session=session,
        session_label=str(session) if session is not None else "",
        detail=detail,
    )
