"""The action log: one row per write, written inside the transaction of the write it records."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from actionlog.models import ActionLog
from actionlog.verbs import require_declared
from core.actors import Actor, actor_kind, actor_name, user_of

if TYPE_CHECKING:  # every app writes the log; the log imports none of them
    from sessions_app.facade import ChatSession
    from teams.facade import Team

__all__ = ["PendingAction", "record_action"]


def record_action(
    *, actor: Actor, action: str, session: ChatSession | None, team: Team | None = None, **detail: Any
) -> ActionLog:
    """Append one line to the action log; call it inside the use case's transaction.

    The actor is named as well as linked, so the row still says who acted once the user is deleted;
    a system actor (a worker, a command) and a link holder have a name and no user.
    """
    if actor is None:
        raise TypeError("record_action() needs an actor")
    action = require_declared(action)
    return ActionLog.objects.create(
        actor=user_of(actor),
        actor_kind=actor_kind(actor),
        actor_name=actor_name(actor)[:150],
        action=action,
        session=session,
        session_label=str(session) if session is not None else "",
        session_number=session.pk if session is not None else None,
        team=team,
        team_label=team.name if team is not None else "",
        detail=detail,
    )


@dataclass(frozen=True, slots=True)
class PendingAction:
    """The log row of an append, written by the append itself in its own transaction.

    The pipelined append (``leaf_append``) sends its commit with its statements, so it writes this row
    with them (``insert_sql``); the ORM path calls ``write``.
    """

    actor: Actor
    action: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "action", require_declared(self.action))

    def write(self, session: ChatSession) -> ActionLog:
        return record_action(actor=self.actor, action=self.action, session=session, **self.detail)

    def insert_sql(self, session: ChatSession, *, leaf: str, stamp: Any) -> tuple[str, list[Any]]:
        """Return an INSERT that writes the row only if the append moved the leaf (a refusal writes none).

        ``stamp`` is the ``updated_at`` the append sets: with the new leaf it tells this append from any
        other, and becomes the row's time.
        """
        user = user_of(self.actor)
        table = ActionLog._meta.db_table
        sessions = ActionLog._meta.get_field("session").related_model._meta.db_table  # type: ignore[union-attr]
        sql = (
            f"INSERT INTO {table} (actor_id, actor_kind, actor_name, action, session_id, session_number, "
            "session_label, team_id, team_label, detail, created_at) "
            f"SELECT %s, %s, %s, %s, id, id, %s, NULL, '', %s::jsonb, %s FROM {sessions} "
            "WHERE id = %s AND leaf_entry_id = %s AND updated_at = %s"
        )
        values = [
            user.pk if user is not None else None,
            actor_kind(self.actor),
            actor_name(self.actor)[:150],
            self.action,
            str(session),
            json.dumps(dict(self.detail)),
            stamp,
            session.pk,
            leaf,
            stamp,
        ]
        return sql, values
