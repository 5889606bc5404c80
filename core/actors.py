"""Who performs a write: a signed-in user, the holder of a share link, or a named part of the server.

Every write use case takes one of these explicitly; there is no default. A system actor is a worker or a
command acting on the server's own authority (the purge worker, ``manage.py import_pi_sessions``); the
action log names it. A link actor holds a share link and nothing else (it may read, never write).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "COMMAND",
    "COMPACTION_WORKER",
    "IDENTITY_PROVIDER",
    "PURGE_WORKER",
    "RUN_WORKER",
    "Actor",
    "LinkActor",
    "SystemActor",
    "UserActor",
    "actor_kind",
    "actor_name",
    "command",
    "user_of",
]


@runtime_checkable
class UserActor(Protocol):
    """A user as Django's auth gives it: a real account, or the anonymous user of a request."""

    pk: Any

    @property
    def is_authenticated(self) -> bool: ...

    def get_username(self) -> str: ...


@dataclass(frozen=True, slots=True)
class SystemActor:
    """A named part of the server: a worker or a management command."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class LinkActor:
    """Whoever holds a share link (``link`` is the ``ShareLink`` row): read access to its session only."""

    link: Any

    def __str__(self) -> str:
        return f"link {self.link.token_prefix}…" if self.link.token_prefix else f"link {self.link.pk}"


Actor = UserActor | LinkActor | SystemActor

PURGE_WORKER = SystemActor("purge-worker")
COMPACTION_WORKER = SystemActor("compaction-worker")
RUN_WORKER = SystemActor("run-worker")
# Team memberships decided by the identity provider's groups at sign-in.
IDENTITY_PROVIDER = SystemActor("identity-provider")
COMMAND = SystemActor("command")


def command(name: str) -> SystemActor:
    """Return the actor of a management command, named as it is run (``manage.py NAME``)."""
    return SystemActor(f"manage.py {name}")


def user_of(actor: Actor) -> Any:
    """Return the signed-in user behind ``actor``, or None (a link holder, the server, an anonymous user)."""
    if isinstance(actor, SystemActor | LinkActor):
        return None
    return actor if getattr(actor, "is_authenticated", False) else None


def actor_kind(actor: Actor) -> str:
    """Return how the action log names the actor's kind: user, link, system or anonymous."""
    if isinstance(actor, SystemActor):
        return "system"
    if isinstance(actor, LinkActor):
        return "link"
    return "user" if getattr(actor, "is_authenticated", False) else "anonymous"


def actor_name(actor: Actor) -> str:
    """Return the name the action log keeps for the actor (kept when a user is deleted)."""
    if isinstance(actor, SystemActor | LinkActor):
        return str(actor)
    return actor.get_username() if getattr(actor, "is_authenticated", False) else ""
