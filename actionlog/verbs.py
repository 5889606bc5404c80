"""The action log's verbs: each app declares its own (``<app>/verbs.py``), and the log takes only those.

A verb is a ``StrEnum`` member, stored as its value. Adding one is a line in the app that acts: no choices
on the column, so no migration. The log refuses a verb nobody declared, so a typo fails at once.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar

__all__ = ["declared_verbs", "require_declared", "verbs", "verbs_by_name"]

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
