"""Write use cases for sessions. Each owns its transaction and announces changes only after commit."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from django.db import connection, transaction

from . import realtime
from .domain.entries import Entry as DomainEntry
from .domain.entries import entry_from_value
from .domain.jsjson import js_stringify, parse_json
from .domain.jsonl import (
    CURRENT_VERSION,
    SkippedLine,
    generate_entry_id,
    iter_kept_lines,
    load_text,
    scan_lines,
)
from .domain.operations import (
    ForkMode,
    copy_for_fork,
    fork_plan,
    label_entry,
    new_session_id,
    plan_navigation,
    session_info_entry,
)
from .domain.search import search_text
from .domain.timestamps import now_iso
from .domain.tree import SessionTree, js_trim
from .models import ChatSession, Entry, Segment
from .queries import find_entry, load_tree

__all__ = [
    "AppendConflict",
    "ForkOutcome",
    "ImportResult",
    "InvalidEntries",
    "InvalidSessionFile",
    "NavigationOutcome",
    "append_entries",
    "clone_session",
    "create_session",
    "delete_session",
    "export_filename",
    "export_jsonl",
    "fork_session",
    "import_jsonl",
    "import_stream",
    "navigate_without_summary",
    "rename_session",
    "set_label",
    "set_leaf",
]

ANALYZE_AFTER = 20_000  # entries in one import that make fresh planner statistics worth their cost
COLUMNS = (
    "session_id",
    "seq",
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "raw",
    "parent_seq",
    "depth",
    "segment",
    "compaction_seq",
    "model_seq",
    "thinking_seq",
    "search_text",
)


class InvalidSessionFile(ValueError):
    """The uploaded file is not a Pi session; the message names the line."""


class InvalidEntries(ValueError):
    """Entries offered for append break the tree's rules."""


class AppendConflict(Exception):
    """The session's leaf moved since the caller last looked (optimistic concurrency)."""

    def __init__(self, expected: str | None, actual: str | None) -> None:
        super().__init__(f"the leaf is {actual!r}, not the expected {expected!r}")
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True, slots=True)
class ImportResult:
    session: ChatSession
    created: bool
    appended: int
    skipped: list[SkippedLine] = field(default_factory=list)
    migrated: bool = False


# -- import ---------------------------------------------------------------------------------------------


def import_jsonl(*, owner: Any, data: bytes, filename: str = "") -> ImportResult:
    """Import one session file held in memory."""
    return import_stream(owner=owner, stream=io.BytesIO(data), filename=filename)


def import_stream(*, owner: Any, stream: IO[bytes], filename: str = "") -> ImportResult:
    """Import one session file, reading it twice: once for the tree, once to COPY the verbatim lines.

    Re-importing the same session appends only what is new. All or nothing: one transaction; a bad
    file raises InvalidSessionFile and stores nothing.
    """
    scanned = scan_lines(stream)
    loaded = scanned.loaded
    if not loaded.valid:
        raise InvalidSessionFile(loaded.error or "not a Pi session file")
    entries: Sequence[DomainEntry]
    if scanned.needs_migration:
        stream.seek(0)
        loaded = load_text(stream.read().decode("utf-8", errors="replace"))
        entries = [entry_from_value(seq, line.value) for seq, line in enumerate(loaded.entries)]
        lines: Iterable[tuple[str, Any, str]] = [
            (line.raw, entries[i].timestamp, search_text(line.value)) for i, line in enumerate(loaded.entries)
        ]
    else:
        entries = scanned.entries
        stream.seek(0)
        lines = iter_kept_lines(stream, scanned.line_numbers)
    header = loaded.header or {}
    _check_storable(
        [header.get(k) for k in ("id", "cwd", "timestamp", "parentSession")], "the session header"
    )
    with transaction.atomic():
        existing = ChatSession.objects.select_for_update().filter(owner=owner, pi_id=header["id"]).first()
        if existing is not None:
            appended = _import_into_existing(existing, entries, [raw for raw, _, _ in lines])
            return ImportResult(existing, False, appended, loaded.skipped, loaded.migrated)
        session = _create_session(
            owner=owner, header=loaded.header or {}, header_raw=loaded.header_raw, filename=filename
        )
        _insert_all(session, entries, lines)
    transaction.on_commit(
        partial(realtime.session_changed, session_id=session.pk, last_seq=session.next_seq - 1)
    )
    if len(entries) >= ANALYZE_AFTER and connection.vendor == "postgresql":
        # A bulk load leaves the planner's statistics describing the table before it; stale ones pick
        # full scans of the new session for every later lookup.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Entry._meta.db_table}")
    return ImportResult(session, True, len(entries), loaded.skipped, loaded.migrated)


def _create_session(
    *, owner: Any, header: dict[str, Any], header_raw: str = "", filename: str
) -> ChatSession:
    """Create the session row for a Pi header (written as Pi writes it unless the verbatim line is given)."""
    version = header.get("version")

    def text(key: str) -> str | None:
        value = header.get(key)
        return value if isinstance(value, str) else None

    return ChatSession.objects.create(
        owner=owner,
        pi_id=header["id"],
        header_raw=header_raw or js_stringify(header),
        version=version if isinstance(version, int) and not isinstance(version, bool) else 3,
        cwd=text("cwd") or "",
        pi_timestamp=text("timestamp") or "",
        parent_session=text("parentSession"),
        source_filename=filename,
    )


def _import_into_existing(session: ChatSession, entries: Sequence[DomainEntry], raws: list[str]) -> int:
    """Append the lines beyond what is stored when the stored lines are a prefix of the file."""
    stored = list(Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True))
    if raws[: len(stored)] != stored:
        raise InvalidSessionFile(
            f"a different session with id {session.pi_id!r} is already stored "
            "(its entries differ from this file)"
        )
    new_raws = raws[len(stored) :]
    if not new_raws:
        return 0
    new_entries = [entry_from_value(0, parse_json(raw)) for raw in new_raws]
    for seq, entry in enumerate(new_entries, start=len(stored)):
        _check_storable_entry(entry, entry.timestamp, seq)
    _append_rows(session, new_entries, new_raws, move_leaf=True)
    return len(new_raws)


def _check_storable(values: Iterable[Any], where: str) -> None:
    """Refuse strings PostgreSQL text cannot hold: NUL characters and lone surrogates (JSON allows both)."""
    for value in values:
        if isinstance(value, str) and ("\x00" in value or not _encodes(value)):
            raise InvalidSessionFile(
                f"{where}: a string holds a NUL character or a lone surrogate, which cannot be stored"
            )


def _encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_storable_entry(entry: DomainEntry, stamp: Any, seq: int) -> None:
    name = entry.get("name") if entry.type == "session_info" else None
    _check_storable((entry.id, entry.parent_id, entry.type, _role(entry), stamp, name), f"entry {seq + 1}")


def _insert_all(
    session: ChatSession, entries: Sequence[DomainEntry], lines: Iterable[tuple[str, Any, str]]
) -> None:
    """Insert every entry of a new session with its folded path facts, by COPY where available.

    ``lines`` gives each entry's verbatim text, timestamp and search text, in order; it is consumed once.
    """
    tree = SessionTree(entries)
    facts, segments = tree.path_facts()
    tip: dict[int, tuple[int, int]] = {}
    for seq, fact in enumerate(facts):
        if fact is not None:
            tip[fact.segment] = (seq, fact.depth)

    def rows() -> Iterator[tuple[Any, ...]]:
        for seq, (entry, (raw, stamp, text)) in enumerate(zip(entries, lines, strict=True)):
            _check_storable_entry(entry, stamp, seq)
            fact = facts[seq]
            parent = tree.parent[seq]
            yield (
                session.pk,
                seq,
                entry.id,
                entry.parent_id,
                entry.type or "",
                _role(entry),
                stamp if isinstance(stamp, str) else "",
                raw,
                None if parent == -1 else parent,
                None if fact is None else fact.depth,
                None if fact is None else fact.segment,
                None if fact is None or fact.compaction < 0 else fact.compaction,
                None if fact is None or fact.model < 0 else fact.model,
                None if fact is None or fact.thinking < 0 else fact.thinking,
                text,
            )

    _copy_rows(rows())
    Segment.objects.bulk_create(
        [
            Segment(
                session=session,
                index=s.index,
                parent_index=s.parent_segment,
                start_depth=s.start_depth,
                tip_seq=tip[s.index][0],
                tip_depth=tip[s.index][1],
            )
            for s in segments
        ],
        batch_size=2000,
    )
    leaf = tree.last_leaf_id()
    session.leaf_entry_id = leaf
    session.leaf_seq = tree.by_id[leaf] if leaf is not None else None
    session.next_seq = len(entries)
    session.next_segment = len(segments)
    session.entry_count = len(entries)
    session.message_count = sum(1 for e in entries if e.type == "message")
    session.name = tree.session_name() or ""
    session.save()


def _copy_rows(rows: Iterable[tuple[Any, ...]]) -> None:
    table = Entry._meta.db_table
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            raw_cursor = cursor.cursor
            with raw_cursor.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    placeholders = ", ".join(["%s"] * len(COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({placeholders})", list(rows))


def _role(entry: DomainEntry) -> str:
    role = entry.role
    return role if isinstance(role, str) else ""


def _timestamp(entry: DomainEntry) -> str:
    stamp = entry.timestamp
    return stamp if isinstance(stamp, str) else ""


# -- append ---------------------------------------------------------------------------------------------


# What an append changes on the session row, copied back to the caller's instance without a re-read.
_COUNTERS = (
    "leaf_entry_id",
    "leaf_seq",
    "next_seq",
    "next_segment",
    "entry_count",
    "message_count",
    "name",
    "updated_at",
)


def append_entries(
    *,
    session: ChatSession,
    entries: Sequence[dict[str, Any]],
    expected_leaf: object = ...,
) -> list[Entry]:
    """Append Pi entries in order. Holds SELECT FOR UPDATE on the session row.

    An entry without ``parentId`` hangs under the leaf; an explicit ``parentId`` must name an entry of this
    session (or be null for a new root). Ids must be new. The leaf moves to the last entry appended.
    """
    if not entries:
        raise InvalidEntries("no entries to append")
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        if expected_leaf is not ... and expected_leaf != locked.leaf_entry_id:
            raise AppendConflict(
                expected_leaf if isinstance(expected_leaf, str) else None, locked.leaf_entry_id
            )
        prepared = _prepare_new_entries(locked, entries)
        rows = _append_rows(
            locked,
            [entry_from_value(0, p) for p in prepared],
            [js_stringify(p) for p in prepared],
            move_leaf=True,
        )
    for name in _COUNTERS:
        setattr(session, name, getattr(locked, name))
    return rows


def _prepare_new_entries(session: ChatSession, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate entries and fill in id, parentId and timestamp in Pi's key order. Caller holds the lock."""
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidEntries(f"entry {index}: an entry must be a JSON object")
    wanted = {e["id"] for e in entries if isinstance(e.get("id"), str)}
    wanted |= {e["parentId"] for e in entries if isinstance(e.get("parentId"), str)}
    if session.leaf_entry_id is not None:
        wanted.add(session.leaf_entry_id)
    # One query answers every "does this id exist here?" question of the batch.
    known = set(_existing_ids(session, wanted))
    generated = _new_ids(session, sum(1 for e in entries if e.get("id") is None), avoid=known | wanted)
    leaf = session.leaf_entry_id
    batch: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        where = f"entry {index}"
        kind = entry.get("type")
        if not isinstance(kind, str) or not kind or kind == "session":
            raise InvalidEntries(f"{where}: 'type' must be a non-empty string other than 'session'")
        entry_id = entry.get("id")
        if entry_id is None:
            entry_id = generated.pop()
        elif not isinstance(entry_id, str) or not entry_id:
            raise InvalidEntries(f"{where}: 'id' must be a non-empty string")
        elif entry_id in known or entry_id in batch:
            raise InvalidEntries(f"{where}: id {entry_id!r} already exists in this session")
        parent = entry.get("parentId", leaf)
        if parent is not None and not isinstance(parent, str):
            raise InvalidEntries(f"{where}: 'parentId' must be a string or null")
        if parent is not None and parent not in batch and parent not in known:
            raise InvalidEntries(f"{where}: parent {parent!r} is not an entry of this session")
        stamp = entry.get("timestamp", None)
        if stamp is None:
            stamp = now_iso()
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        out.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **rest})
        batch.add(entry_id)
        leaf = entry_id
    return out


def _existing_ids(session: ChatSession, ids: set[str]) -> list[str]:
    if not ids:
        return []
    return list(Entry.objects.filter(session=session, entry_id__in=ids).values_list("entry_id", flat=True))


def _new_ids(session: ChatSession, count: int, *, avoid: set[str]) -> list[str]:
    """Return ``count`` fresh 8-hex ids that no entry of the session has."""
    fresh: list[str] = []
    while len(fresh) < count:
        candidates = set()
        while len(candidates) < count - len(fresh):
            candidates.add(generate_entry_id(avoid | candidates | set(fresh)))
        taken = set(_existing_ids(session, candidates))
        fresh += [c for c in candidates if c not in taken]
        avoid |= taken
    return fresh


def _append_rows(
    session: ChatSession, entries: Sequence[DomainEntry], raws: Sequence[str], *, move_leaf: bool
) -> list[Entry]:
    """Insert entries after the last one, folding path facts from each parent row. Caller holds the lock."""
    by_id: dict[str, Entry] = {}
    parent_ids = {e.parent_id for e in entries if e.parent_id is not None}
    for row in Entry.objects.filter(session=session, entry_id__in=parent_ids).order_by("seq"):
        by_id[row.entry_id or ""] = row  # the latest duplicate wins
    segments = {
        s.index: s
        for s in Segment.objects.filter(
            session=session, index__in={r.segment for r in by_id.values() if r.segment is not None}
        )
    }
    new_rows: list[Entry] = []
    seq = session.next_seq
    for entry, raw in zip(entries, raws, strict=True):
        parent = by_id.get(entry.parent_id) if entry.parent_id is not None else None
        row = Entry(
            session=session,
            seq=seq,
            entry_id=entry.id,
            parent_id=entry.parent_id,
            type=entry.type or "",
            role=_role(entry),
            timestamp=_timestamp(entry),
            raw=raw,
            search_text=search_text(entry.payload),
        )
        if entry.id is not None:
            if parent is None or parent.depth is None:
                row.depth = 0
                row.segment = session.next_segment
                segment = Segment(
                    session=session,
                    index=row.segment,
                    parent_index=None,
                    start_depth=0,
                    tip_seq=seq,
                    tip_depth=0,
                )
                session.next_segment += 1
            else:
                row.parent_seq = parent.seq
                row.depth = parent.depth + 1
                row.compaction_seq, row.model_seq, row.thinking_seq = (
                    parent.compaction_seq,
                    parent.model_seq,
                    parent.thinking_seq,
                )
                current = segments.get(parent.segment)  # type: ignore[arg-type]
                if current is not None and current.tip_seq == parent.seq:
                    segment = current
                    segment.tip_seq, segment.tip_depth = seq, row.depth
                else:
                    segment = Segment(
                        session=session,
                        index=session.next_segment,
                        parent_index=parent.segment,
                        start_depth=row.depth,
                        tip_seq=seq,
                        tip_depth=row.depth,
                    )
                    session.next_segment += 1
                row.segment = segment.index
            segments[segment.index] = segment
            if entry.type == "compaction":
                row.compaction_seq = seq
            elif entry.type == "model_change" or (entry.type == "message" and entry.role == "assistant"):
                row.model_seq = seq
            elif entry.type == "thinking_level_change":
                row.thinking_seq = seq
            by_id[entry.id] = row
        new_rows.append(row)
        seq += 1
    Entry.objects.bulk_create(new_rows)
    for segment in segments.values():
        segment.save()
    session.next_seq = seq
    session.entry_count += len(new_rows)
    session.message_count += sum(1 for e in entries if e.type == "message")
    for entry in entries:
        if entry.type == "session_info":
            name = entry.get("name")
            session.name = (js_trim(name) if isinstance(name, str) else "") or ""
    last = next((r for r in reversed(new_rows) if r.entry_id is not None), None)
    if move_leaf and last is not None:
        session.leaf_entry_id, session.leaf_seq = last.entry_id, last.seq
    session.save()
    transaction.on_commit(partial(realtime.session_changed, session_id=session.pk, last_seq=seq - 1))
    return new_rows


# -- leaf -----------------------------------------------------------------------------------------------


def set_leaf(*, session: ChatSession, entry_id: str | None) -> ChatSession:
    """Move the leaf to an existing entry (or to none). Holds SELECT FOR UPDATE on the session row."""
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        if entry_id is None:
            locked.leaf_entry_id, locked.leaf_seq = None, None
        else:
            row = Entry.objects.filter(session=locked, entry_id=entry_id).order_by("-seq").first()
            if row is None:
                raise InvalidEntries(f"Entry {entry_id} not found")
            locked.leaf_entry_id, locked.leaf_seq = row.entry_id, row.seq
        locked.save(update_fields=["leaf_entry_id", "leaf_seq", "updated_at"])
        transaction.on_commit(
            partial(
                realtime.leaf_moved,
                session_id=locked.pk,
                leaf=locked.leaf_entry_id,
                last_seq=locked.next_seq - 1,
            )
        )
    return locked


# -- export ---------------------------------------------------------------------------------------------


def export_jsonl(session: ChatSession) -> Iterable[bytes]:
    """Yield the session file: the header line, then every entry's stored line, in append order."""
    yield (session.header_raw + "\n").encode("utf-8", errors="surrogatepass")
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    for raw in rows.iterator(chunk_size=2000):
        yield (raw + "\n").encode("utf-8", errors="surrogatepass")


# -- session actions ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NavigationOutcome:
    """Where the leaf went and the text a user-message target puts back into the editor."""

    leaf_id: str | None
    editor_text: str | None
    changed: bool


@dataclass(frozen=True, slots=True)
class ForkOutcome:
    """The new session and the forked user message's text (forks before a user message only)."""

    session: ChatSession
    editor_text: str | None


def export_filename(session: ChatSession) -> str:
    """Return the file name Pi gives this session: its header timestamp (``:`` and ``.`` as ``-``), id."""
    stamp = session.pi_timestamp.replace(":", "-").replace(".", "-")
    return f"{stamp}_{session.pi_id}.jsonl"


def create_session(*, owner: Any, cwd: str, name: str | None = None) -> ChatSession:
    """Create an empty session with a fresh header; a name becomes its first ``session_info`` entry."""
    header = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": new_session_id(),
        "timestamp": now_iso(),
        "cwd": cwd,
    }
    # Built before anything is written, so an unusable name stores nothing.
    info = session_info_entry(SessionTree([]), None, name) if name is not None and js_trim(name) else None
    with transaction.atomic():
        session = _create_session(owner=owner, header=header, filename="")
        session.save()
        if info is not None:
            append_entries(session=session, entries=[_under_leaf(info)])
    return session


def rename_session(*, session: ChatSession, name: str) -> ChatSession:
    """Name the session by appending a ``session_info`` entry under the leaf (Pi's ``set_session_name``)."""
    entry = session_info_entry(SessionTree([]), None, name)
    append_entries(session=session, entries=[_under_leaf(entry)])
    return session


def delete_session(*, session: ChatSession) -> None:
    """Delete the session with all its entries."""
    session_id = session.pk
    with transaction.atomic():
        ChatSession.objects.filter(pk=session_id).delete()
        transaction.on_commit(partial(realtime.broadcast, session_id, "session_deleted"))


def set_label(*, session: ChatSession, target_id: str, label: str | None) -> list[Entry]:
    """Label an entry (an empty label clears it) by appending a ``label`` entry under the leaf."""
    target = find_entry(session, target_id)
    # The label needs only to know that its target exists, so a one-entry tree is enough.
    entry = label_entry(SessionTree([target.to_domain()]), None, target_id, label or None)
    return append_entries(session=session, entries=[_under_leaf(entry)])


def navigate_without_summary(*, session: ChatSession, target_id: str) -> NavigationOutcome:
    """Move the leaf as Pi's tree navigation does: a user message target gives its parent and its text."""
    entries = [] if target_id == session.leaf_entry_id else [find_entry(session, target_id).to_domain()]
    plan = plan_navigation(SessionTree(entries), session.leaf_entry_id, target_id)
    if plan.changed:
        set_leaf(session=session, entry_id=plan.new_leaf_id)
        session.refresh_from_db()
    return NavigationOutcome(plan.new_leaf_id, plan.editor_text, plan.changed)


def fork_session(
    *,
    session: ChatSession,
    entry_id: str,
    actor: Any,
    position: str | None = None,
    mode: ForkMode = "path",
) -> ForkOutcome:
    """Create a session from ``entry_id``: before a user message (its text to the editor) or at any entry.

    Without a position, user messages fork before and everything else at the entry.
    """
    find_entry(session, entry_id)  # an unknown id is "not found", before the whole tree is read
    tree = load_tree(session)
    if position is None:
        target = tree.get(entry_id)
        is_user = target is not None and target.type == "message" and target.role == "user"
        position = "before" if is_user else "at"
    plan = fork_plan(tree, entry_id, "at" if position == "at" else "before")
    branched = copy_for_fork(
        tree, plan.target_leaf_id, mode=mode, cwd=session.cwd, parent_session=export_filename(session)
    )
    new = _store_branched(branched.header, branched.entries, branched.leaf_id, session, entry_id, actor)
    return ForkOutcome(new, plan.selected_text)


def clone_session(*, session: ChatSession, actor: Any, entry_id: str | None = None) -> ChatSession:
    """Create a session holding the path to ``entry_id`` (default: the leaf), labels re-created."""
    leaf = entry_id if entry_id is not None else session.leaf_entry_id
    if leaf is None:
        raise InvalidEntries("Cannot clone session: no current entry selected")
    find_entry(session, leaf)
    branched = copy_for_fork(
        load_tree(session), leaf, mode="path", cwd=session.cwd, parent_session=export_filename(session)
    )
    return _store_branched(branched.header, branched.entries, branched.leaf_id, session, leaf, actor)


def _store_branched(
    header: dict[str, Any],
    entries: list[dict[str, Any]],
    leaf_id: str | None,
    source: ChatSession,
    entry_id: str,
    actor: Any,
) -> ChatSession:
    with transaction.atomic():
        new = _create_session(owner=actor, header=header, filename="")
        _insert_all(
            new,
            [entry_from_value(seq, e) for seq, e in enumerate(entries)],
            [(js_stringify(e), e.get("timestamp"), search_text(e)) for e in entries],
        )
        # Copy modes other than "path" keep file order, so the leaf need not be the last entry.
        leaf_seq = next((s for s in range(len(entries) - 1, -1, -1) if entries[s].get("id") == leaf_id), None)
        new.leaf_entry_id = leaf_id if leaf_seq is not None else None
        new.leaf_seq = leaf_seq
        new.forked_from = source
        new.forked_from_entry = entry_id
        new.forked_by = actor
        new.save()
    return new


def _under_leaf(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop id and parent so ``append_entries`` hangs the entry under the leaf it holds locked."""
    return {k: v for k, v in entry.items() if k not in ("id", "parentId")}
