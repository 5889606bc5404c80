"""Reading Pi session files as Pi does: the header is the first line that parses, lines end at ``\\n``.

Only complete lines count; a line Pi is still writing (no newline yet) is left for the next pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Header", "complete_lines", "digest", "find_header", "line_id", "parse_line"]


@dataclass(frozen=True, slots=True)
class Header:
    text: str  # the header line as written, without its line ending
    end: int  # byte offset just after the header line
    session_id: str
    version: float  # Pi treats a missing version as 1
    cwd: str
    timestamp: str


def parse_line(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def find_header(data: bytes) -> Header | None:
    """Return the header when the first complete line that parses is a session header, else None."""
    pos = 0
    while (end := data.find(b"\n", pos)) >= 0:
        value = parse_line(data[pos:end])
        if value:  # blank, unparseable and falsy lines are skipped, as Pi skips them
            if not (
                isinstance(value, dict)
                and value.get("type") == "session"
                and isinstance(value.get("id"), str)
            ):
                return None
            version = value.get("version")
            number = version if isinstance(version, int | float) and not isinstance(version, bool) else 1
            if isinstance(version, str):
                try:
                    number = float(version)
                except ValueError:
                    number = 3  # Pi runs no migration step for a non-numeric version
            text = data[pos:end].decode("utf-8", errors="replace").rstrip("\r")
            cwd = value.get("cwd") if isinstance(value.get("cwd"), str) else ""
            stamp = value.get("timestamp") if isinstance(value.get("timestamp"), str) else ""
            return Header(text, end + 1, value["id"], number, cwd, stamp)
        pos = end + 1
    return None


def complete_lines(data: bytes, start: int) -> Iterator[tuple[int, int]]:
    """Yield (start, end) byte spans of the complete lines after ``start``; ``end`` is past the newline."""
    pos = start
    while (end := data.find(b"\n", pos)) >= 0:
        yield pos, end + 1
        pos = end + 1


def line_id(raw: bytes) -> str | None:
    """Return the entry id of a line, or None for lines outside the tree."""
    value = parse_line(raw)
    if isinstance(value, dict) and value.get("type") != "session" and isinstance(value.get("id"), str):
        return value["id"]
    return None


def digest(data: bytes) -> str:
    """A fingerprint of the acknowledged part of a file, to notice a file rewritten in place."""
    return hashlib.sha256(data).hexdigest()
