"""Search by work: the ``path:``, ``tool:`` and ``cmd:`` terms of a search, apart from its words.

- ``path:src/app.py`` a file exactly; ``path:src/`` every file under a folder (a trailing ``/``);
  ``path:*.py``, ``path:src/**/test_*.py`` a glob: ``*`` and ``?`` stay within a folder name, ``**``
  crosses folders, ``[abc]`` one of; a glob without ``/`` matches the file name in any folder. A path
  starting with ``/`` or ``~`` is matched against absolute paths, any other against the path as the
  Files panel shows it (relative to the session's folder when inside it).
- ``tool:edit`` a use of that tool; beside a ``path:`` it narrows the path to that tool's touches
  (``tool:edit path:src/`` = files edited under src/). Several ``tool:`` terms are alternatives.
- ``cmd:pytest`` a ``bash`` command (the model's or the user's ``!command``) containing the text.

Values may be quoted (``cmd:"npm test"``). Every term must hold in a session; the rest of the query is
text, searched as before. Terms of other names (``http://``, ``a:b``) stay text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["PathPattern", "WorkQuery", "WorkQueryError", "glob_regex", "parse_work_query"]

KEYS = ("path", "tool", "cmd")
MAX_TERMS = 8
_TERM = re.compile(r'(?:(?<=\s)|^)(-?)(path|tool|cmd):(?:"([^"]*)"?|(\S*))', re.IGNORECASE)
_TOOL_NAME = re.compile(r"^[\w.:-]+$")
_GLOB_CHARS = re.compile(r"[*?\[]")

Match = Literal["exact", "prefix", "glob"]


class WorkQueryError(ValueError):
    """A term that cannot be searched; the message says why, for the person who typed it."""


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A ``path:`` term: what was typed, how it matches, and whether it names absolute paths."""

    text: str
    match: Match
    absolute: bool
    regex: str = ""  # for a glob: a regular expression both PostgreSQL and Python read alike


@dataclass(frozen=True, slots=True)
class WorkQuery:
    paths: list[PathPattern] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    text: str = ""  # what is left: words for the text search

    @property
    def has_work(self) -> bool:
        return bool(self.paths or self.tools or self.commands)


def parse_work_query(query: str) -> WorkQuery:
    """Split ``query`` into work terms and text; raise WorkQueryError for a term that cannot be searched."""
    paths: list[PathPattern] = []
    tools: list[str] = []
    commands: list[str] = []
    found = list(_TERM.finditer(query))
    if len(found) > MAX_TERMS:
        raise WorkQueryError(f"A search takes at most {MAX_TERMS} path:, tool: and cmd: terms.")
    for term in found:
        minus, key, quoted, bare = term.groups()
        key = key.lower()
        value = (quoted if quoted is not None else bare).strip()
        if minus:
            raise WorkQueryError(f"-{key}: cannot exclude; search for what the sessions did instead.")
        if not value:
            raise WorkQueryError(f"{key}: needs a value, as in {_EXAMPLES[key]}.")
        if key == "path":
            paths.append(path_pattern(value))
        elif key == "tool":
            if not _TOOL_NAME.match(value):
                raise WorkQueryError(f"tool:{value} is not a tool name (letters, digits, _ . : -).")
            tools.append(value)
        else:
            commands.append(value)
    text = _TERM.sub(" ", query) if found else query
    return WorkQuery(paths, tools, commands, " ".join(text.split()))


_EXAMPLES = {"path": "path:src/app.py, path:src/ or path:*.py", "tool": "tool:edit", "cmd": "cmd:pytest"}


def path_pattern(value: str) -> PathPattern:
    absolute = value.startswith(("/", "~"))
    if _GLOB_CHARS.search(value):
        return PathPattern(value, "glob", absolute, glob_regex(value))
    if value.endswith("/"):
        return PathPattern(value, "prefix", absolute)
    return PathPattern(value, "exact", absolute)


def glob_regex(glob: str) -> str:
    """Return an anchored regular expression for a path glob (see the module's notes).

    Only ``.*``, ``[^/]``, groups, brackets and backslash-escaped punctuation are used: PostgreSQL's
    advanced expressions and Python's ``re`` read them alike.
    """
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                raise WorkQueryError(f"path:{glob} opens a [ it does not close.")
            inner = glob[i + 1 : end]
            negated = inner.startswith(("!", "^"))
            inner = inner[1:] if negated else inner
            if not inner:
                raise WorkQueryError(f"path:{glob} has an empty [].")
            escaped = "".join("\\" + ch if ch in "\\]^[" else ch for ch in inner)
            out.append(f"[{'^/' if negated else ''}{escaped}]")
            i = end + 1
        else:
            out.append(re.escape(c) if not c.isalnum() and c not in "/_" else c)
            i += 1
    body = "".join(out)
    # A bare name pattern matches the file name in any folder.
    regex = f"^(.*/)?{body}$" if "/" not in glob else f"^{body}$"
    try:
        re.compile(regex)
    except re.error as exc:  # a range backwards, as [z-a]
        raise WorkQueryError(f"path:{glob} is not a pattern: {exc.msg}.") from exc
    return regex
