"""Command-line views of the domain code, in the JSON shape of Pi's conformance cases.

Each command module exposes ``run(args: list[str]) -> object`` returning a JSON-ready value.
A failure the command can describe is returned as ``{"error": ...}``, never raised.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from pitree.jsjson import js_stringify

COMMANDS: dict[str, str] = {
    "project": "compaction_app.sessiontool.project",
    "cut": "compaction_app.sessiontool.cut",
    "overflow": "compaction_app.sessiontool.overflow",
    "fork": "compaction_app.sessiontool.fork",
    "branch-summary": "compaction_app.sessiontool.branch_summary",
    "branch-with-summary": "compaction_app.sessiontool.branch_with_summary",
    "context-edit": "compaction_app.sessiontool.context_edit",
}


def dump(value: object) -> str:
    """Write an answer as Pi's oracle does: ``JSON.stringify``'s number spelling and key order."""
    return js_stringify(value)


def resolve(command: str) -> Callable[[list[str]], object]:
    """Return the ``run`` function of a sessiontool command."""
    if command not in COMMANDS:
        raise KeyError(f"unknown sessiontool command: {command!r} (known: {', '.join(COMMANDS)})")
    return importlib.import_module(COMMANDS[command]).run  # type: ignore[no-any-return]
