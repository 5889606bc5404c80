"""Import a Pi session file: a new session by COPY, or the new tail of a session already stored."""

from __future__ import annotations

import hashlib
import io
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, SystemActor, user_of
from pitree.context_sums import OwnColumns
from pitree.entries import Entry as DomainEntry
from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from pitree.jsonl import (
    LoadedFile,
    SkipReport,
    is_object_line,
    iter_kept_lines,
    load_text,
    objects_only,
    scan_lines,
)
from pitree.redacted import is_redaction_of
from pitree.searchable import search_text
from pitree.storable import Unstorable
from pitree.tool_uses import Facts
from sessions_app import access
from sessions_app.attribution import Author, author_of
from sessions_app.models import ChatSession, Entry, EntrySearch, EntrySums, FileStep, Segment, ToolUse
from sessions_app.services import tool_index
from sessions_app.services.errors import InvalidSessionFile, QuotaExceeded
from sessions_app.services.rows import check_storable, create_session_row
from sessions_app.services.sharing import share_by_team_defaults
from sessions_app.services.store import check_line, entry_store
from sessions_app.verbs import Action

__all__ = ["ANALYZE_AFTER", "ImportResult", "import_jsonl", "import_stream", "refresh_statistics"]

log = logging.getLogger(__name__)

# Entries that make fresh planner statistics worth their cost (about 0.1-0.3 s a table): written at once,
# they are a session the statistics do not know; changed over time, when they are also a fifth of what
# the planner believes the table holds.
ANALYZE_AFTER = 20_000
STALE_SHARE = 0.2
# The session table grows by one row per import: many small imports (a whole ~/.pi/agent/sessions at
# once) left it never analyzed, and the planner took 2,001 readable sessions for 7.
SESSIONS_ANALYZE_AFTER = 200
STREAM_ROWS = 2_000  # stored rows read at a time when a re-import compares them with the file


@dataclass(frozen=True, slots=True)
class ImportResult:
    session: ChatSession
    created: bool
    appended: int
    skipped: SkipReport = field(default_factory=SkipReport)
    migrated: bool = False
    # Entries the stored session holds that the file does not (it grew on the server since).
    server_only: int = 0


def import_jsonl(
    *, actor: Actor, data: bytes, filename: str = "", owner: Any = None, author: Author | None = None
) -> ImportResult:
    """Import one session file held in memory."""
    return import_stream(actor=actor, owner=owner, stream=io.BytesIO(data), filename=filename, author=author)


def import_stream(
    *,
    actor: Actor,
    stream: IO[bytes],
    filename: str = "",
    owner: Any = None,
    author: Author | None = None,
) -> ImportResult:
    """Import one session file for ``owner``, reading it twice: once for the tree, once to COPY the lines.

    ``owner`` is the actor itself unless a system actor (a command) imports for a user. Re-importing
    the same session appends only what is new. All or nothing: one transaction with its action-log
    row; a bad file raises InvalidSessionFile and stores nothing. Only the entries (JSON objects after
    the header) count toward the entry limit, and only their bytes toward the quota (the entry
    store's): skipped lines are not stored. The entries are recorded as imported by ``actor`` (or
    written by ``author``: a sync device sending an old file).
    """
    author = author if author is not None else author_of(actor, imported=True)
    owner = _owner(actor, owner)
    loaded, entries, lines, kept_bytes, light = _read(stream)
    header = loaded.header or {}
    _check_file(len(entries))
    check_storable([header.get(k) for k in ("id", "cwd", "timestamp", "parentSession")], "the session header")
    with transaction.atomic():
        existing = ChatSession.objects.select_for_update().filter(owner=owner, pi_id=header["id"]).first()
        if existing is not None:
            appended, ahead = _import_into_existing(
                existing, (raw for raw, _, _ in lines(None, None)), author
            )
            result = ImportResult(existing, False, appended, loaded.skipped, loaded.migrated, ahead)
        else:
            session = create_session_row(
                owner=owner, header=header, header_raw=loaded.header_raw, filename=filename
            )
            # Lines scanned light: what they say about tools and their context sums are read with them,
            # as they are copied in (a migrated file's entries are whole, and say it themselves).
            tools = tool_index.Spool() if light else None
            own = OwnColumns() if light else None
            try:
                entry_store().insert_all(
                    session,
                    entries,
                    lines(tools.add if tools is not None else None, own),
                    size=kept_bytes,
                    own=own,
                    tools=tools,
                    author=author,
                    checked=False,
                )
            finally:
                if tools is not None:
                    tools.close()
            transaction.on_commit(
                partial(realtime.session_changed, session_id=session.pk, last_seq=session.next_seq - 1)
            )
            share_by_team_defaults(session=session, actor=actor)
            result = ImportResult(session, True, len(entries), loaded.skipped, loaded.migrated)
        record_action(
            actor=actor,
            action=Action.IMPORT,
            session=result.session,
            created=result.created,
            appended=result.appended,
            serverOnly=result.server_only or None,
        )
    refresh_statistics(result.appended)
    return result


def _owner(actor: Actor, owner: Any) -> Any:
    """Return who the imported session belongs to: the signed-in actor, or a user a command names."""
    user = user_of(actor)
    if owner is None or (user is not None and owner.pk == user.pk):
        if user is None:
            raise access.NotSignedIn()
        return user
    if not isinstance(actor, SystemActor):
        raise access.Forbidden("Only the server's own commands import sessions for another user.")
    return owner


def refresh_statistics(added: int) -> None:
    """ANALYZE the entry, search, tool-use and file-step tables when bulk writes have left their planner
    statistics far behind.

    Imports and syncs call it after committing ``added`` entries.

    Statistics that do not know a big new session make the planner expect a handful of its rows and scan
    all of them for every lookup (opening a 100k-entry session took 50 ms instead of 6), and a search
    table the planner believes empty sends every query kind but the rarest through the wrong index (ten
    times slower at a million entries). Autovacuum catches up eventually, or never where it is off; many
    small imports add up through the counts of rows changed since the last ANALYZE.
    """
    if added and connection.vendor == "sqlite":
        _refresh_sqlite_statistics(added)
        return
    if not added or connection.vendor != "postgresql":
        return
    sessions = ChatSession._meta.db_table
    tables = [
        Entry._meta.db_table,
        EntrySearch._meta.db_table,
        ToolUse._meta.db_table,
        FileStep._meta.db_table,
        sessions,
    ]
    due: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, greatest(c.reltuples, 0), coalesce(s.n_mod_since_analyze, 0) FROM pg_class c "
            "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = ANY(%s)",
            [tables],
        )
        for table, believed, changed in cursor.fetchall():
            if table == sessions:
                # Rows changed here are sessions, counted as such (this one may not be counted yet).
                if int(changed) + 1 >= max(SESSIONS_ANALYZE_AFTER, STALE_SHARE * float(believed)):
                    due.append(table)
                continue
            # This import's own rows may not be in the counts yet: they are published about once a second.
            pending = max(int(changed), added)
            if added >= ANALYZE_AFTER or (
                pending >= ANALYZE_AFTER and pending >= STALE_SHARE * float(believed)
            ):
                due.append(table)
        due.sort(key=tables.index)  # the biggest first
        helper = None
        if len(due) > 1 and not connection.in_atomic_block:
            # Two at a time, the other on a connection of its own (the rows are committed, so it sees
            # them): each ANALYZE keeps one server process busy, and a whole session's took 2.5 s in a row.
            helper = threading.Thread(target=_analyze_apart, args=(due[1::2],), name="piweb-analyze")
            helper.start()
            due = due[0::2]
        for table in due:
            _analyze(cursor, table)
        if helper is not None:
            helper.join()


def _analyze_apart(tables: list[str]) -> None:
    try:
        with connection.cursor() as cursor:  # this thread's own connection
            for table in tables:
                _analyze(cursor, table)
    except DatabaseError:
        log.warning("could not refresh the planner statistics of %s", ", ".join(tables), exc_info=True)
    finally:
        connection.close()


def _refresh_sqlite_statistics(added: int) -> None:
    """ANALYZE the embedded database's entry tables when they have no statistics or a bulk write came.

    Without statistics SQLite's planner answered "the entry with this id" by walking the whole session
    in seq order (a third of a second at 100k entries, on every click in the tree) instead of probing
    the id index; one ANALYZE (about 0.1 s at 100k entries) sets that right.
    """
    tables = [Entry._meta.db_table, EntrySums._meta.db_table, Segment._meta.db_table, FileStep._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
        known = cursor.fetchone() is not None
        if known:
            cursor.execute("SELECT 1 FROM sqlite_stat1 WHERE tbl = %s LIMIT 1", [tables[0]])
            known = cursor.fetchone() is not None
        if known and added < ANALYZE_AFTER:
            return
        for table in tables:
            _analyze(cursor, table)


def _analyze(cursor: Any, table: str) -> None:
    # The entries are committed by now: statistics are only an optimisation, so a failure (a lock or
    # statement timeout) is logged rather than turned into an error for a write that succeeded. The
    # savepoint keeps a caller's transaction usable.
    try:
        with transaction.atomic():
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    except DatabaseError:
        log.warning("could not refresh the planner statistics of %s", table, exc_info=True)


def _check_file(entries: int) -> None:
    """Refuse (413, with the numbers) a file past the entry limit before anything is stored.

    The stored-bytes quota is the entry store's, as for every write.
    """
    limit = int(settings.PIWEB_MAX_IMPORT_ENTRIES)
    if limit and entries > limit:
        raise QuotaExceeded(f"The file holds {entries} entries; an import accepts at most {limit}.")


# The kept lines read again: (line, timestamp, search text) each; what they say about tools is told to the
# callback given and their own context sums go to the columns given, if any (none are when the entries
# hold whole payloads).
Lines = Callable[
    [Callable[[int, str | None, Facts], None] | None, OwnColumns | None], Iterable[tuple[str, Any, str]]
]
# What a scan gives: the load, its entries, the kept lines, the kept bytes, and whether its entries hold
# light payloads (what needs the whole line is then worked out as the lines are read again).
Read = tuple[LoadedFile, Sequence[DomainEntry], Lines, int, bool]


def _read(stream: IO[bytes]) -> Read:
    """Scan the file: what it loaded, its entries, (line, timestamp, search text) per kept line, and bytes."""
    try:
        scanned = scan_lines(stream)
    except Unstorable as exc:  # a key field past its cap: the file's error, as every adapter shows it
        raise InvalidSessionFile(str(exc)) from exc
    loaded = scanned.loaded
    if not loaded.valid:
        raise InvalidSessionFile(loaded.error or "not a Pi session file")
    if scanned.needs_migration:
        stream.seek(0)
        loaded = objects_only(load_text(stream.read().decode("utf-8", errors="replace")))
        entries = [entry_from_value(seq, line.value) for seq, line in enumerate(loaded.entries)]
        # A current file's key fields were measured as it was scanned; a migrated one's are measured here,
        # so the store need not measure either again.
        for seq, entry in enumerate(entries):
            check_line(entry, f"entry {seq + 1}")
        lines = [
            (line.raw, entries[i].timestamp, search_text(line.value)) for i, line in enumerate(loaded.entries)
        ]
        kept_bytes = sum(len(raw.encode("utf-8", "surrogatepass")) for raw, _, _ in lines)
        return loaded, entries, lambda _tools, _own: lines, kept_bytes, False

    def again(
        tools: Callable[[int, str | None, Facts], None] | None, own: OwnColumns | None
    ) -> Iterable[tuple[str, Any, str]]:
        stream.seek(0)
        return iter_kept_lines(stream, scanned.line_numbers, tools, own)

    return loaded, scanned.entries, again, scanned.kept_bytes, True


def _import_into_existing(session: ChatSession, raws: Iterator[str], author: Author) -> tuple[int, int]:
    """Append the file's entries the session does not hold; return (appended, held only by the server).

    The usual case streams: the stored lines are a prefix of the file (the file grew in Pi), compared
    a batch of stored rows at a time, so only the new lines are ever held together (a re-import of a
    100k-entry file held both copies, 458 MB). When the session grew on the server too (a run, a
    branch), the two are one append-only tree: entries are matched by id, those the file alone has are
    appended in its order, and an id whose line differs (other than by a redaction) refuses the file.
    """
    stored_rows = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    stored = 0
    pending: str | None = None
    for old in stored_rows.iterator(chunk_size=STREAM_ROWS):
        # Sessions imported before lines that are not objects were skipped may still hold some.
        if not is_object_line(old):
            continue
        line = next(raws, None)
        if line is None:
            # The file ends where the session goes on: the server holds what came after it.
            return 0, _object_lines(session) - stored
        if line != old and not is_redaction_of(old, line):
            pending = line
            break
        stored += 1
    if pending is not None:
        return _merge_by_id(session, itertools.chain([pending], raws), author, matched=stored)
    new_raws = list(raws)
    if not new_raws:
        return 0, 0
    new_entries = [entry_from_value(0, parse_json(raw)) for raw in new_raws]
    entry_store().append_lines(
        session, new_entries, new_raws, where=lambda i: f"entry {stored + i + 1}", author=author
    )
    return len(new_raws), 0


def _object_lines(session: ChatSession) -> int:
    return sum(
        1
        for raw in Entry.objects.filter(session=session).values_list("raw", flat=True).iterator(STREAM_ROWS)
        if is_object_line(raw)
    )


def _digest(raw: str) -> bytes:
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _merge_by_id(
    session: ChatSession, raws: Iterator[str], author: Author, *, matched: int
) -> tuple[int, int]:
    """Append the file's entries whose ids the session lacks, after checking the shared ones agree.

    ``matched``: how many of the file's first lines were already found equal to the stored ones.
    """
    # A digest per stored entry, not its line: the memory stays small for a large session.
    held = {
        entry_id: _digest(raw)
        for entry_id, raw in Entry.objects.filter(session=session, entry_id__isnull=False)
        .values_list("entry_id", "raw")
        .iterator(STREAM_ROWS)
    }
    new_raws: list[str] = []
    shared = matched
    for raw in raws:
        value = parse_json(raw)
        entry_id = value.get("id") if isinstance(value, dict) else None
        if not isinstance(entry_id, str):
            raise InvalidSessionFile(
                f"a different session with id {session.pi_id!r} is already stored "
                "(its entries differ from this file)"
            )
        digest = held.get(entry_id)
        if digest is None:
            new_raws.append(raw)
            continue
        if digest != _digest(raw):
            old = (
                Entry.objects.filter(session=session, entry_id=entry_id).values_list("raw", flat=True).first()
            )
            if old is None or not is_redaction_of(old, raw):
                raise InvalidSessionFile(
                    f"a different session with id {session.pi_id!r} is already stored: its entry "
                    f"{entry_id!r} differs from this file's, and one id cannot hold both"
                )
        shared += 1
    server_only = len(held) - shared
    if new_raws:
        new_entries = [entry_from_value(0, parse_json(raw)) for raw in new_raws]
        entry_store().append_lines(
            session, new_entries, new_raws, where=lambda i: f"new entry {i + 1} of the file", author=author
        )
    return len(new_raws), server_only
