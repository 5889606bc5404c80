"""Live sync from a Pi user's local session files: new complete lines are appended verbatim.

The client sends the id of the last entry it knows the server holds; the server appends only when
that cursor is its own last entry, so a resent batch is refused instead of stored twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from .domain.entries import entry_from_value
from .domain.jsjson import INVALID, js_truthy, parse_json
from .domain.jsonl import SkippedLine
from .models import ChatSession, Entry
from .services import InvalidSessionFile, _append_rows, _create_session

__all__ = ["SyncConflict", "SyncResult", "last_entry_id", "sync_lines"]


class SyncConflict(Exception):
    """The client's cursor is not the server's last entry."""

    def __init__(self, expected: str | None, actual: str | None) -> None:
        super().__init__(f"the server's last entry is {actual!r}, not {expected!r}")
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True, slots=True)
class SyncResult:
    session: ChatSession
    created: bool
    appended: int
    last_entry_id: str | None
    skipped: list[SkippedLine] = field(default_factory=list)


def last_entry_id(session: ChatSession) -> str | None:
    """Return the id of the newest stored entry that has one (the sync cursor)."""
    return (
        Entry.objects.filter(session=session, entry_id__isnull=False)
        .order_by("-seq")
        .values_list("entry_id", flat=True)
        .first()
    )


def _header(header_line: str) -> dict[str, Any]:
    header = parse_json(header_line)
    if not (
        isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)
    ):
        raise InvalidSessionFile('the header line must be {"type":"session", "id": <string>, ...}')
    version = header.get("version")
    if not isinstance(version, int | float) or isinstance(version, bool) or version < 3:
        raise InvalidSessionFile("live sync takes version 3 files; import older files once to migrate them")
    return header


def sync_lines(*, owner: Any, header_line: str, after: str | None, lines: Sequence[str]) -> SyncResult:
    """Append ``lines`` (complete file lines after the header) when ``after`` is the server's last entry.

    Holds SELECT FOR UPDATE on the session row. Unparseable lines are skipped and reported, as on import.
    """
    header = _header(header_line)
    skipped: list[SkippedLine] = []
    raws: list[str] = []
    values: list[Any] = []
    for index, line in enumerate(lines):
        text = line[:-1] if line.endswith("\n") else line
        if not text.strip():
            continue
        value = parse_json(text)
        if value is INVALID or (not js_truthy(value) and not isinstance(value, dict | list)):
            skipped.append(SkippedLine(index + 1, "not valid JSON", text[:120]))
            continue
        raws.append(text)
        values.append(value)
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().filter(owner=owner, pi_id=header["id"]).first()
        created = session is None
        if session is None:
            session = _create_session(
                owner=owner, header=header, header_raw=header_line.rstrip("\r\n"), filename="live sync"
            )
        current = last_entry_id(session)
        if current != after:
            raise SyncConflict(after, current)
        if raws:
            _append_rows(session, [entry_from_value(0, v) for v in values], raws, move_leaf=True)
        last = last_entry_id(session)
    return SyncResult(session, created, len(raws), last, skipped)
