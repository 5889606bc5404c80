"""Live sync from a Pi user's local session files, keyed on the local file's own progress.

The client says how far the server has acknowledged its file (lines and bytes after the header, and the
last local entry id among them) and sends the complete lines after that. What the web added to the
session meanwhile (labels, summaries, forks, runs) is not part of the file and never blocks it. A line
whose id is already stored with the same bytes is skipped, so a resend after a crash stores nothing
twice; the same id with other bytes is a real conflict, reported for that file alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ..domain.entries import entry_from_value
from ..domain.jsjson import parse_json
from ..domain.jsonl import SkipReport, skip_reason
from ..models import ChatSession, Entry
from .errors import InvalidSessionFile
from .importing import import_jsonl, refresh_statistics
from .rows import create_session_row
from .store import entry_store

__all__ = ["Cursor", "SyncConflict", "SyncCursorMismatch", "SyncResult", "sync_lines", "sync_state"]


@dataclass(frozen=True, slots=True)
class Cursor:
    """How much of the local file the server holds: complete lines and bytes, and the last id among them."""

    lines: int
    bytes: int | None
    last_id: str | None

    def as_json(self) -> dict[str, Any]:
        return {"lines": self.lines, "bytes": self.bytes, "lastId": self.last_id}

    @classmethod
    def of(cls, session: ChatSession | None) -> Cursor | None:
        raw = session.sync_cursor if session is not None else None
        if not isinstance(raw, dict):
            return None
        return cls(int(raw.get("lines") or 0), raw.get("bytes"), raw.get("lastId"))


class SyncConflict(Exception):
    """A line's id is stored with other bytes (or an old file no longer matches): this file stops here."""

    def __init__(self, message: str, entry_id: str | None = None) -> None:
        super().__init__(message)
        self.entry_id = entry_id


class SyncCursorMismatch(Exception):
    """The client believes the server holds more of its file than it does; it should resend from here."""

    def __init__(self, cursor: Cursor) -> None:
        super().__init__(f"the server holds {cursor.lines} line(s) of this file; send the lines after that")
        self.cursor = cursor


@dataclass(frozen=True, slots=True)
class SyncResult:
    session: ChatSession
    created: bool
    appended: int
    known: int
    cursor: Cursor
    skipped: SkipReport = field(default_factory=SkipReport)


def sync_state(*, owner: Any, pi_id: str) -> tuple[ChatSession | None, Cursor | None]:
    """Return the owner's session with this Pi id and the sync cursor the server holds for it."""
    session = ChatSession.objects.filter(owner=owner, pi_id=pi_id).first()
    return session, Cursor.of(session)


def _header(header_line: str) -> dict[str, Any]:
    header = parse_json(header_line)
    if not (
        isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)
    ):
        raise InvalidSessionFile('the header line must be {"type":"session", "id": <string>, ...}')
    return header


def _is_old(header: dict[str, Any]) -> bool:
    """Pi migrates a file whose version is missing or a number below 3 (a numeric string counts too)."""
    version = header.get("version", 1)
    if isinstance(version, str):
        try:
            version = float(version)
        except ValueError:
            return False
    return version is None or (
        isinstance(version, int | float) and not isinstance(version, bool) and version < 3
    )


def sync_lines(
    *,
    owner: Any,
    header_line: str,
    start: Cursor,
    end_lines: int,
    end_bytes: int | None,
    lines: Sequence[str],
    reset: bool = False,
    path: str = "",
) -> SyncResult:
    """Store the complete lines a local file holds after ``start``; see the module docstring.

    ``reset`` says the client restarted its file (it was rewritten, or the client lost its place): the
    cursor is not checked and lines already stored are recognised by id. ``path`` is where the file
    lives on the client's machine (a fork's ``parentSession`` names it, as Pi names its source file).
    """
    header = _header(header_line)
    if "\x00" in path:
        raise InvalidSessionFile("the path holds a NUL character")
    if end_lines != start.lines + len(lines):
        raise InvalidSessionFile(f"to.lines must be from.lines + {len(lines)}")
    if _is_old(header):
        return _sync_old_file(owner, header_line, header, end_lines, end_bytes, lines, path)
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().filter(owner=owner, pi_id=header["id"]).first()
        cursor = Cursor.of(session)
        if session is None and start.lines > 0:
            raise SyncCursorMismatch(Cursor(0, None, None))
        skip = 0
        if cursor is not None and not reset:
            if start.lines > cursor.lines:
                raise SyncCursorMismatch(cursor)
            skip = min(cursor.lines - start.lines, len(lines))  # a resend: these are stored already
        raws, values, skipped = _parse(lines, start.lines, skip)
        created = session is None
        if session is None:
            session = create_session_row(
                owner=owner,
                header=header,
                header_raw=header_line.rstrip("\r\n"),
                filename=path or "live sync",
            )
        fresh_raws, fresh_values = _drop_known(session, raws, values)
        entries = [entry_from_value(0, v) for v in fresh_values]
        if entries:
            first = start.lines + skip + 1
            entry_store().append_lines(
                session, entries, fresh_raws, where=lambda i: f"line {first + i} after the header"
            )
        ids = [v["id"] for v in values if isinstance(v, dict) and isinstance(v.get("id"), str)]
        last_id = ids[-1] if ids else (cursor.last_id if cursor is not None and not reset else start.last_id)
        new_cursor = Cursor(end_lines, end_bytes, last_id)
        session.sync_cursor = new_cursor.as_json()
        session.save(update_fields=["sync_cursor"])
    refresh_statistics(len(entries))
    return SyncResult(session, created, len(entries), len(raws) - len(entries), new_cursor, skipped)


def _parse(lines: Sequence[str], first: int, skip: int) -> tuple[list[str], list[Any], SkipReport]:
    """Keep the lines after ``skip`` that import would store (JSON objects); report the others."""
    raws: list[str] = []
    values: list[Any] = []
    skipped = SkipReport()
    for index, line in enumerate(lines):
        if index < skip:
            continue
        text = line[:-1] if line.endswith("\n") else line
        if not text.strip():
            continue
        value = parse_json(text)
        reason = skip_reason(value)
        if reason is not None:
            skipped.add(first + index + 1, reason, text)
            continue
        raws.append(text)
        values.append(value)
    return raws, values, skipped


def _drop_known(session: ChatSession, raws: list[str], values: list[Any]) -> tuple[list[str], list[Any]]:
    """Drop lines whose id is stored with the same bytes; refuse one stored with other bytes."""
    ids = {v["id"] for v in values if isinstance(v, dict) and isinstance(v.get("id"), str)}
    stored: dict[str, set[str]] = {}
    for entry_id, raw in Entry.objects.filter(session=session, entry_id__in=ids).values_list(
        "entry_id", "raw"
    ):
        stored.setdefault(entry_id, set()).add(raw)
    kept_raws: list[str] = []
    kept_values: list[Any] = []
    for raw, value in zip(raws, values, strict=True):
        entry_id = value.get("id") if isinstance(value, dict) else None
        if isinstance(entry_id, str) and entry_id in stored:
            if raw in stored[entry_id]:
                continue
            raise SyncConflict(
                f"entry {entry_id} is stored on the server with different content; this file is skipped",
                entry_id,
            )
        kept_raws.append(raw)
        kept_values.append(value)
    return kept_raws, kept_values


def _sync_old_file(
    owner: Any,
    header_line: str,
    header: dict[str, Any],
    end_lines: int,
    end_bytes: int | None,
    lines: Sequence[str],
    path: str,
) -> SyncResult:
    """A v1/v2 file is migrated as import migrates it; Pi rewrites such files before appending to them."""
    existing = ChatSession.objects.filter(owner=owner, pi_id=header["id"]).first()
    cursor = Cursor.of(existing)
    if existing is not None and cursor is not None and cursor.lines >= end_lines:
        return SyncResult(existing, False, 0, end_lines, cursor)  # already stored, ids were assigned then
    text = header_line.rstrip("\r\n") + "\n" + "".join(line.rstrip("\n") + "\n" for line in lines)
    try:
        result = import_jsonl(
            owner=owner, data=text.encode("utf-8", "surrogatepass"), filename=path or "live sync"
        )
    except InvalidSessionFile as exc:
        if existing is not None:
            raise SyncConflict(f"{exc}; a version {header.get('version', 1)} file cannot be merged") from exc
        raise
    session = result.session
    last_id = (
        Entry.objects.filter(session=session, entry_id__isnull=False)
        .order_by("-seq")
        .values_list("entry_id", flat=True)
        .first()
    )
    new_cursor = Cursor(end_lines, end_bytes, last_id)
    session.sync_cursor = new_cursor.as_json()
    session.save(update_fields=["sync_cursor"])
    return SyncResult(session, result.created, result.appended, 0, new_cursor, result.skipped)
