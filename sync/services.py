"""Live sync from a Pi user's local session files, matched by identity: entry id and bytes, never position.

The client says how far the server has acknowledged its file (lines and bytes after the header, and the
last local entry id among them) and sends the complete lines after that. Every line is matched to the
stored ones by id (``domain.sync_match``): a known id with the same bytes is skipped, so a resend after a
crash or from a second machine stores nothing twice; a new id is stored under its own parent, so two
machines that diverged keep both tails as two branches; the same id with other bytes is a conflict for
that file, reported with its ids. The leaf follows the last push. What the web added meanwhile (labels,
summaries, forks, runs) is not part of the file and never blocks it.

The cursor the server keeps (the last push's) is only a hint for a client that lost its own progress;
aliases (a pulled file's leaf markers, ids Pi gave a migrated file) are kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from django.db import transaction

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, user_of
from live.facade import pi_left, pi_writing
from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from pitree.jsonl import SkipReport, skip_reason
from pitree.searchable import search_text
from pitree.sync_match import Line, Plan, content_key, is_leaf_marker, plan_lines, resolve
from provenance.facade import GitState, note_workspace
from sessions_app.facade import (
    Author,
    ChatSession,
    Entry,
    InvalidSessionFile,
    NotSignedIn,
    author_of,
    create_session_row,
    entry_store,
    import_jsonl,
    line_bytes,
    refresh_statistics,
    share_by_team_defaults,
)
from sync.verbs import Action

__all__ = [
    "Cursor",
    "NoSuchSession",
    "SyncConflict",
    "SyncCursorMismatch",
    "SyncResult",
    "pi_beat",
    "sync_lines",
    "sync_state",
]


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

    def __init__(self, message: str, entry_id: str | None = None, entry_ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.entry_id = entry_id
        self.entry_ids = list(entry_ids) or ([entry_id] if entry_id else [])


class SyncCursorMismatch(Exception):
    """The client believes the server holds more of its file than it does; it should resend from here."""

    def __init__(self, cursor: Cursor) -> None:
        super().__init__(f"the server holds {cursor.lines} line(s) of this file; send the lines after that")
        self.cursor = cursor


@dataclass(frozen=True, slots=True)
class SyncResult:
    session: ChatSession | None  # None only for a dry run of a session the server does not hold
    created: bool
    appended: int
    known: int
    cursor: Cursor
    skipped: SkipReport = field(default_factory=SkipReport)
    conflicts: list[str] = field(default_factory=list)  # ids stored with other bytes (a dry run's)


def sync_state(*, owner: Any, pi_id: str) -> tuple[ChatSession | None, Cursor | None]:
    """Return the owner's session with this Pi id and the sync cursor the server holds for it."""
    session = ChatSession.objects.filter(owner=owner, pi_id=pi_id).first()
    return session, Cursor.of(session)


class NoSuchSession(LookupError):
    """The pushing user holds no session with this Pi id (nothing was pushed yet)."""


def pi_beat(*, actor: Actor, pi_id: str, device: str, leaving: bool = False) -> ChatSession:
    """Show the actor's Pi on ``device`` as writing their session ``pi_id`` live, or take it off.

    Called for the Pi package's beats and with each of its pushes; the node shown is the session's
    leaf, which follows the last push. Presence only: nothing is stored or logged.
    """
    owner = user_of(actor)
    if owner is None:
        raise NotSignedIn()
    session = (
        ChatSession.objects.filter(owner=owner, pi_id=pi_id).only("pk", "leaf_entry_id", "owner_id").first()
    )
    if session is None:
        raise NoSuchSession(f"you have no session with Pi id {pi_id!r} on this server")
    if leaving:
        pi_left(session_id=session.pk, user_id=owner.pk, device=device)
    else:
        name = (owner.get_full_name() or "").strip() or owner.get_username()
        pi_writing(
            session_id=session.pk, user_id=owner.pk, name=name, device=device, node=session.leaf_entry_id
        )
    return session


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
    actor: Actor,
    header_line: str,
    start: Cursor,
    end_lines: int,
    end_bytes: int | None,
    lines: Sequence[str],
    reset: bool = False,
    path: str = "",
    dry_run: bool = False,
    token: Any = None,
    session_id: int | None = None,
    workspace: GitState | None = None,
    source: str = "sync",
) -> SyncResult:
    """Store the complete lines a local file holds after ``start``; see the module docstring.

    ``reset`` says the client restarted its file (it was rewritten, or the client lost its place): lines
    Pi gave new ids in a migration are then recognised by their content too. ``path`` is where the file
    lives on the client's machine (a fork's ``parentSession`` names it, as Pi names its source file).
    ``dry_run`` stores and logs nothing: the result says what a push would store (``status`` asks it).
    Each push leaves one action-log row (lines stored, conflicts), in its own transaction.
    ``actor`` is the signed-in user pushing their own file; ``token`` the API token it pushed with
    (the stored lines are recorded as written by that device). ``session_id`` names the session the lines
    must go to instead of the actor's own with that Pi id (a runner writing a session it was given; the
    caller has checked the actor may change it): lines of another Pi id are refused.
    ``workspace`` is the git state of the session's folder the client saw (``source``: "sync" or
    "runner"), recorded with the lines (``provenance``).
    """
    author = author_of(actor, token=token)
    owner = user_of(actor)
    if owner is None:
        raise NotSignedIn()
    header = _header(header_line)
    if "\x00" in path:
        raise InvalidSessionFile("the path holds a NUL character")
    if end_lines != start.lines + len(lines):
        raise InvalidSessionFile(f"to.lines must be from.lines + {len(lines)}")
    if _is_old(header):
        if session_id is not None:
            raise InvalidSessionFile("a runner writes Pi's current format only (version 3)")
        return _sync_old_file(actor, author, header_line, header, end_lines, end_bytes, lines, path, dry_run)
    parsed, skipped = _parse(lines, start.lines)
    with transaction.atomic():
        if session_id is None:
            query = ChatSession.objects.filter(owner=owner, pi_id=header["id"])
        else:
            query = ChatSession.objects.filter(pk=session_id, pi_id=header["id"], deleted_at__isnull=True)
        session = (query if dry_run else query.select_for_update()).first()
        if session is None and session_id is not None:
            raise InvalidSessionFile("these lines are of another session than the one this run writes")
        if session is None and start.lines > 0:
            raise SyncCursorMismatch(Cursor(0, None, None))
        aliases = _aliases(session)
        # The lines after ``start`` hang under the last acknowledged one: the server must hold it.
        if (
            session is not None
            and not reset
            and start.lines > 0
            and start.last_id is not None
            and not _holds(session, resolve(start.last_id, aliases))
        ):
            raise SyncCursorMismatch(Cursor(0, None, None))
        plan = _plan(session, parsed, aliases, reset=reset)
        if dry_run:
            return SyncResult(
                session, False, len(plan.new), plan.known + plan.markers, Cursor.of(session) or start,
                skipped, plan.conflicts,
            )  # fmt: skip
        if plan.conflicts:
            record_action(
                actor=actor, action=Action.SYNC, session=session, lines=0, conflicts=plan.conflicts[:50]
            )
        else:
            result = _store(
                actor, author, session, header, header_line, path, plan, start, end_lines, end_bytes
            )
            if workspace is not None and result.session is not None:
                note_workspace(session=result.session, state=workspace, source=source)
    if plan.conflicts:
        raise SyncConflict(_conflict_message(plan.conflicts), plan.conflicts[0], plan.conflicts)
    refresh_statistics(result.appended)
    return SyncResult(
        result.session, result.created, result.appended, result.known, result.cursor, skipped, []
    )


def _store(
    actor: Actor,
    author: Author,
    session: ChatSession | None,
    header: dict[str, Any],
    header_line: str,
    path: str,
    plan: Plan,
    start: Cursor,
    end_lines: int,
    end_bytes: int | None,
) -> SyncResult:
    owner = user_of(actor)
    created = session is None
    if session is None:
        session = create_session_row(
            owner=owner, header=header, header_raw=header_line.rstrip("\r\n"), filename=path or "live sync"
        )
    entries = [entry_from_value(seq, value) for seq, (_, value) in enumerate(plan.new)]
    if created:
        # A whole new file: stored as an import stores it, by COPY with the tree folded once.
        entry_store().insert_all(
            session,
            entries,
            ((raw, value.get("timestamp"), search_text(value)) for raw, value in plan.new),
            size=sum(line_bytes(raw) for raw, _ in plan.new),
            author=author,
        )
        transaction.on_commit(
            partial(realtime.session_changed, session_id=session.pk, last_seq=session.next_seq - 1)
        )
        share_by_team_defaults(session=session, actor=actor)
    elif entries:
        entry_store().append_lines(
            session,
            entries,
            [raw for raw, _ in plan.new],
            where=lambda i: f"new line {i + 1} of this push",
            author=author,
            move_leaf=True,
        )
    if plan.leaf_marker is not None and plan.leaf_marker != session.leaf_entry_id:
        # The file ends at a leaf marker (a pull put it there): Pi resumes at its node, so does the session.
        seq = (
            Entry.objects.filter(session=session, entry_id=plan.leaf_marker)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
        )
        if seq is not None:
            session.leaf_entry_id, session.leaf_seq = plan.leaf_marker, seq
            session.save(update_fields=["leaf_entry_id", "leaf_seq"])
    ids = [v["id"] for _, v in plan.new if isinstance(v.get("id"), str)]
    old = Cursor.of(session)
    last_id = ids[-1] if ids else (old.last_id if old is not None else start.last_id)
    new_cursor = Cursor(end_lines, end_bytes, last_id)
    aliases = {**_aliases(session), **plan.aliases}
    session.sync_cursor = {**new_cursor.as_json(), **({"aliases": aliases} if aliases else {})}
    session.save(update_fields=["sync_cursor"])
    known = plan.known + plan.markers
    record_action(
        actor=actor, action=Action.SYNC, session=session, lines=len(entries), known=known, conflicts=[]
    )
    return SyncResult(session, created, len(entries), known, new_cursor)


def _conflict_message(ids: list[str]) -> str:
    more = (
        f" (and {len(ids) - 1} more: {', '.join(ids[1:6])}{'…' if len(ids) > 6 else ''})"
        if len(ids) > 1
        else ""
    )
    return f"entry {ids[0]} is stored on the server with different content{more}; this file is skipped"


def _aliases(session: ChatSession | None) -> dict[str, str]:
    raw = session.sync_cursor if session is not None else None
    aliases = raw.get("aliases") if isinstance(raw, dict) else None
    return {k: v for k, v in aliases.items() if isinstance(v, str)} if isinstance(aliases, dict) else {}


def _holds(session: ChatSession, entry_id: str) -> bool:
    return Entry.objects.filter(session=session, entry_id=entry_id).exists()


def _parse(lines: Sequence[str], first: int) -> tuple[list[Line], SkipReport]:
    """Keep the lines import would store (JSON objects); report the others."""
    kept: list[Line] = []
    skipped = SkipReport()
    for index, line in enumerate(lines):
        text = line[:-1] if line.endswith("\n") else line
        if not text.strip():
            continue
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = parse_json(text)  # what JSON.parse accepts beyond orjson (lone surrogates, huge numbers)
        reason = skip_reason(value)
        if reason is not None:
            skipped.add(first + index + 1, reason, text)
            continue
        kept.append(Line(first + index + 1, text, value))
    return kept, skipped


def _plan(session: ChatSession | None, lines: list[Line], aliases: dict[str, str], *, reset: bool) -> Plan:
    """Fetch what the batch's ids (and, on a restart, its unknown lines' contents) match, then decide."""
    if session is None:
        return plan_lines(lines, stored={}, aliases={})
    ids = sorted({line.value["id"] for line in lines if isinstance(line.value.get("id"), str)})
    stored: dict[str, set[str]] = {}
    for part in _chunks(ids):
        rows = Entry.objects.filter(session=session, entry_id__in=part).values_list("entry_id", "raw")
        for entry_id, raw in rows.iterator(chunk_size=2000):
            stored.setdefault(entry_id or "", set()).add(raw)  # never empty: the filter named each id
    if any(not isinstance(line.value.get("id"), str) for line in lines):
        loose = Entry.objects.filter(session=session, entry_id__isnull=True).values_list("raw", flat=True)
        stored[""] = set(loose)
    by_content: dict[Any, Any] | None = None
    if reset:
        unknown = [
            line for line in lines
            if isinstance(line.value.get("id"), str) and line.value["id"] not in stored
            and line.value["id"] not in aliases and not is_leaf_marker(line.value)
        ]  # fmt: skip
        stamps = sorted({v for line in unknown if isinstance(v := line.value.get("timestamp"), str)})
        if stamps:
            by_content = {}
            for part in _chunks(stamps):
                candidates = Entry.objects.filter(
                    session=session, timestamp__in=part, entry_id__isnull=False
                ).values_list("entry_id", "raw")
                for entry_id, raw in candidates.iterator(chunk_size=2000):
                    value = parse_json(raw)
                    if isinstance(value, dict):
                        by_content.setdefault(content_key(value), entry_id)
    return plan_lines(lines, stored=stored, aliases=aliases, by_content=by_content)


def _chunks(values: list[str], size: int = 5000) -> Iterator[list[str]]:
    """Bounded ``IN`` lists: a whole file's ids would pass PostgreSQL's 65,535 query parameters."""
    for first in range(0, len(values), size):
        yield values[first : first + size]


def _sync_old_file(
    actor: Actor,
    author: Author,
    header_line: str,
    header: dict[str, Any],
    end_lines: int,
    end_bytes: int | None,
    lines: Sequence[str],
    path: str,
    dry_run: bool,
) -> SyncResult:
    """A v1/v2 file is migrated as import migrates it; Pi rewrites such files before appending to them."""
    existing = ChatSession.objects.filter(owner=user_of(actor), pi_id=header["id"]).first()
    cursor = Cursor.of(existing)
    if existing is not None and cursor is not None and cursor.lines >= end_lines:
        return SyncResult(existing, False, 0, end_lines, cursor)  # already stored, ids were assigned then
    if dry_run:
        return SyncResult(existing, False, len(lines), 0, cursor or Cursor(0, None, None))
    text = header_line.rstrip("\r\n") + "\n" + "".join(line.rstrip("\n") + "\n" for line in lines)
    try:
        result = import_jsonl(
            actor=actor,
            data=text.encode("utf-8", "surrogatepass"),
            filename=path or "live sync",
            author=author,
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
