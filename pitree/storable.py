"""What can be stored: the one check every write path applies to values it received from outside.

PostgreSQL text cannot hold a NUL character or a lone UTF-16 surrogate (JSON allows both), a value
nested thousands deep exhausts any recursive reader, and an unbounded string is a resource hole. Every
adapter (REST, page, socket, sync, import, command) refuses such values with the same message, so the
same input gets the same answer everywhere.

Pure Python: no framework imports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "FIELD_CAPS",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_KEY_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_NAME_CHARS",
    "MAX_PARAM_CHARS",
    "MAX_TEXT_CHARS",
    "NOT_STORABLE",
    "Unstorable",
    "check_fields",
    "check_json",
    "check_param",
    "check_text",
    "check_texts",
    "storable_copy",
    "storable_text",
]

# Deeper than any Pi entry (a message nests content blocks a handful of levels) and far below the
# interpreter's recursion limit, so every later reader and writer of the value is safe.
MAX_DEPTH = 256
# One free-text field such as a prompt, compaction instructions or a label (a whole entry is bounded
# by the request body limit instead).
MAX_TEXT_CHARS = 1_000_000
# Names: session names, team names, usernames, link entry ids.
MAX_NAME_CHARS = 1_000
# A query parameter or path segment.
MAX_PARAM_CHARS = 2_000

NOT_STORABLE = "holds a NUL character or a lone surrogate, which cannot be stored"

# Pi writes 8 hex characters; ids are indexed, so they are capped well below what an index row holds.
MAX_ID_CHARS = 255
# Types, custom types, roles, provider and model names, thinking levels, timestamps.
MAX_KEY_CHARS = 255
# Labels and session names are shown as text, not indexed.
MAX_LABEL_CHARS = 1_000

# The documented caps, by field (``message.x`` is a field of the entry's message). Only string values
# are measured: Pi's own entries hold strings there, and other values are kept as they came.
FIELD_CAPS: dict[str, int] = {
    "id": MAX_ID_CHARS,
    "parentId": MAX_ID_CHARS,
    "targetId": MAX_ID_CHARS,
    "fromId": MAX_ID_CHARS,
    "firstKeptEntryId": MAX_ID_CHARS,
    "type": MAX_KEY_CHARS,
    "customType": MAX_KEY_CHARS,
    "provider": MAX_KEY_CHARS,
    "modelId": MAX_KEY_CHARS,
    "thinkingLevel": MAX_KEY_CHARS,
    "timestamp": MAX_KEY_CHARS,
    "label": MAX_LABEL_CHARS,
    "name": MAX_LABEL_CHARS,
    "message.role": MAX_KEY_CHARS,
    "message.provider": MAX_KEY_CHARS,
    "message.model": MAX_KEY_CHARS,
    "message.api": MAX_KEY_CHARS,
    "message.customType": MAX_KEY_CHARS,
    "message.toolCallId": MAX_ID_CHARS,
    "message.toolName": MAX_KEY_CHARS,
}
_TOP_FIELDS = [(k, v) for k, v in FIELD_CAPS.items() if "." not in k]
_MESSAGE_FIELDS = [(k.split(".", 1)[1], k, v) for k, v in FIELD_CAPS.items() if k.startswith("message.")]
_TOP_NAMES = frozenset(name for name, _ in _TOP_FIELDS)
_MESSAGE_NAMES = frozenset(key for key, _, _ in _MESSAGE_FIELDS)


class Unstorable(ValueError):
    """A value that cannot be stored; ``str()`` is the message the client sees (a 400)."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where} {problem}" if where else problem)


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_copy(text: str) -> str:
    """Return ``text`` with what PostgreSQL text cannot hold (NUL, lone surrogates) made spaces: for
    values the server derives from lines it already stored (a path, a command), which must not refuse
    the line they came from."""
    return _UNSTORABLE.sub(" ", text) if "\x00" in text or not text.isascii() else text


def storable_text(text: str) -> bool:
    """Return whether PostgreSQL text can hold ``text``: no NUL and well-formed (no lone surrogate)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(value: Any, where: str, *, max_chars: int = MAX_TEXT_CHARS) -> None:
    """Raise ``Unstorable`` unless ``value`` (when a string) is storable and at most ``max_chars`` long."""
    if not isinstance(value, str):
        return
    if len(value) > max_chars:
        raise Unstorable(where, f"is longer than {max_chars} characters")
    if not storable_text(value):
        raise Unstorable(where, NOT_STORABLE)


def check_texts(values: Iterable[Any], where: str, *, max_chars: int = MAX_TEXT_CHARS) -> None:
    """Apply ``check_text`` to each value."""
    for value in values:
        check_text(value, where, max_chars=max_chars)


def check_param(value: str, where: str) -> None:
    """Refuse a query parameter or path segment that could not reach the database intact."""
    check_text(value, where, max_chars=MAX_PARAM_CHARS)


def check_json(value: Any, where: str, *, max_depth: int = MAX_DEPTH, strings: bool = True) -> None:
    """Refuse a decoded JSON value nested deeper than ``max_depth`` or holding an unstorable string.

    Keys are checked as well as values (``strings=False`` checks only the depth). Iterative, so a
    hostile depth cannot exhaust the stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if strings and not storable_text(item):
                raise Unstorable(where, f"has a string that {NOT_STORABLE}")
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise Unstorable(where, f"is nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    if strings and isinstance(key, str) and not storable_text(key):
                        raise Unstorable(where, f"has a key that {NOT_STORABLE}")
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)


# -- key fields of an entry -------------------------------------------------------------------------------


def check_fields(value: Any, where: str) -> None:
    """Refuse an entry whose key fields pass their caps or cannot be stored; the message names the field.

    Content strings are stored escaped in the verbatim line, so only the key fields (those extracted
    into columns, indexed, or shown as names) are measured here.
    """
    if not isinstance(value, dict):
        return
    # Only the fields a line holds are looked at, in the caps' order (an import checks every line).
    if value.keys() & _TOP_NAMES:
        for name, cap in _TOP_FIELDS:
            if name in value:
                _check_one(value[name], where, name, cap)
    message = value.get("message")
    if isinstance(message, dict) and message.keys() & _MESSAGE_NAMES:
        for key, name, cap in _MESSAGE_FIELDS:
            if key in message:
                _check_one(message[key], where, name, cap)


def _check_one(value: Any, where: str, name: str, cap: int) -> None:
    if not isinstance(value, str) or (len(value) <= cap and value.isascii() and "\x00" not in value):
        return
    if len(value) > cap:
        raise Unstorable(f"{where}: '{name}'", f"is longer than {cap} characters")
    if not storable_text(value):
        raise Unstorable(f"{where}: '{name}'", NOT_STORABLE)
