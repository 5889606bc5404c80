"""The action log's verbs: each app declares its own (``<app>/verbs.py``), and the log takes only those.

A verb is a ``StrEnum`` member, stored as its value. Adding one is a line in the app that acts: no choices
on the column, so no migration. The log refuses a verb nobody declared, so a typo fails at once.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

__all__ = ["declared_verbs", "require_declared", "spoken", "verbs", "verbs_by_name"]

E = TypeVar("E", bound=type[StrEnum])

# value -> (app label, member name)
_DECLARED: dict[str, tuple[str, str]] = {}


def verbs(app: str) -> Callable[[E], E]:
    """Class decorator: declare the members of a ``StrEnum`` as ``app``'s action-log verbs."""

    def declare(enum: E) -> E:
        for member in enum:
            owner = _DECLARED.get(member.value)
            if owner is not None and owner != (app, member.name):
                raise ValueError(f"action-log verb {member.value!r} is declared by {owner[0]} already")
            if len(member.value) > 16:
                raise ValueError(f"action-log verb {member.value!r} is longer than the column (16)")
            _DECLARED[member.value] = (app, member.name)
        return enum

    return declare


def require_declared(action: str) -> str:
    """Return the verb's value; ValueError if no app declared it."""
    value = str(action)
    if value not in _DECLARED:
        raise ValueError(f"{value!r} is not an action-log verb: declare it in its app's verbs.py")
    return value


def declared_verbs() -> list[str]:
    """Every declared verb's value, sorted (filters and the activity page list these)."""
    return sorted(_DECLARED)


def verbs_by_name() -> dict[str, str]:
    """Every declared verb by member name, e.g. ``{"TEAM_CREATE": "team_create"}``."""
    return {name: value for value, (_app, name) in _DECLARED.items()}


# How people read a verb where its code would not do (the activity page, the admin's filters and lists).
_SPOKEN = {
    "token_create": "API token created",
    "token_revoke": "API token revoked",
    "run": "prompt run",
    "abort": "run stopped",
    "compact": "compaction requested",
    "compact_refused": "compaction refused",
    "compacted": "compacted",
    "compact_failed": "compaction failed",
    "branch_summary": "branch summarized",
    "cancel": "operation cancelled",
    "comment_create": "commented",
    "comment_edit": "comment edited",
    "comment_delete": "comment deleted",
    "comment_resolve": "thread resolved",
    "comment_reopen": "thread reopened",
    "redact": "secrets redacted",
    "hold": "legal hold placed",
    "unhold": "legal hold lifted",
    "policy": "team policy changed",
    "provider_create": "model added",
    "provider_change": "model changed",
    "provider_delete": "model removed",
    "import": "imported",
    "export": "exported",
    "navigate": "continued from an entry",
    "fork": "forked",
    "clone": "cloned",
    "share": "shared",
    "revoke": "sharing stopped",
    "label": "labelled",
    "append": "entries added",
    "rename": "renamed",
    "delete": "deleted",
    "settings": "settings changed",
    "create": "created",
    "purge": "purged",
    "sync": "synced",
    "team_create": "team created",
    "team_invite": "invited to a team",
    "team_accept": "joined a team",
    "team_decline": "declined an invitation",
    "team_role": "team role changed",
    "team_leave": "left a team",
    "team_remove": "removed from a team",
    "team_withdraw": "invitation withdrawn",
    "team_settings": "team settings changed",
    "team_sync": "team membership from sign-in",
    "runner_create": "runner registered",
    "runner_revoke": "runner revoked",
    "runner_online": "runner connected",
    "runner_offline": "runner disconnected",
    "runner_dispatch": "run sent to a runner",
    "runner_steer": "run steered",
    "runner_follow_up": "follow-up queued",
    "handoff": "handed over",
}


def spoken(verb: str) -> str:
    """Return the verb as people read it ("team created"); an undescribed one reads as its words."""
    return _SPOKEN.get(verb, verb.replace("_", " "))
