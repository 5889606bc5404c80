"""What each entry did to the files of its branch, kept as the entry is stored (``FileStep``).

A step depends only on the path root → its entry, which never changes once written, so it is worked out
once: the result's call is found above it, the file's earlier step on that path (``prev_seq``) says
whether the branch had touched the file and whether its text was known, and that text is rebuilt from
the lines of the few steps since the file was last read or written whole. The files view then sums the
steps on a node's path (``branch_files``) instead of walking every line of the branch.

Every way in is covered: appends holding tool results or user commands through ``entries_stored``
(which carries the rows), and a whole session (import, fork, clone) through ``NewSteps`` as its rows
are copied in, or ``record_new`` from its stored lines. A session's ``file_steps_through`` says how far
its steps go. Rows past it that make no steps (appends of other messages, which do not tell this module)
lose nothing; a tool result or command past it without steps (the previous release appended it, or the
session predates the steps) leaves the mark where it was, so readers walk the branch instead of trusting
a gap, until ``extend`` (``manage.py reconcile``) catches up. A redaction rewrites lines steps were
worked out from: ``rebuild`` writes them again.
"""

from __future__ import annotations

import hashlib
import marshal
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import IO, Any

import orjson
from django.db import connection
from django.db.models import Case, Exists, F, OuterRef, Q, When

from pitree.files import FILE_TOOLS, FilesWalk, Step, call_target, user_command
from pitree.jsjson import parse_json
from pitree.storable import storable_copy
from sessions_app import changed_files
from sessions_app.models import ChatSession, Entry, FileStep, ToolUse
from sessions_app.queries import SegmentTable, path_ranges, segment_table

__all__ = [
    "ACTS_ON",
    "NewSteps",
    "complete_through",
    "extend",
    "file_hash",
    "on_path",
    "rebuild",
    "record",
    "record_new",
    "rewritten",
]

ACTS_ON = (("message", "toolResult"), ("message", "bashExecution"))
UP_ROUNDS = 64  # rows looked up at most, per result, for its call
FLUSH_ROWS = 1000  # steps written at a time while a whole session is read
TEXT_BYTES = 32_000_000  # compressed file texts kept by one batch at most (past it, lines are read again)
ROLES = ("assistant", "toolResult", "bashExecution")
STEP_ROLES = ("toolResult", "bashExecution")
FILE_CALLS = ("read", "edit", "write", "bash")  # the calls whose arguments steps read
_TABLE = FileStep._meta.db_table
_TOTALS = ("kinds", "added_sum", "removed_sum", "change_count", "read_count", "known_commands")
_COLUMNS = (
    "session_id",
    "seq",
    "segment",
    "depth",
    "entry_id",
    "call_seq",
    "call_entry_id",
    "kind",
    "absolute",
    "file_hash",
    "path",
    "added",
    "removed",
    "known",
    "resets",
    "prev_seq",
    "failed",
    "by_user",
    "command",
    "commands",
    *_TOTALS,
)


def file_hash(absolute: str) -> int:
    """The file index's key: the path's SHA-256, its first 8 bytes as a signed integer."""
    digest = hashlib.sha256(absolute.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _parsed(raw: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return parse_json(raw)


@dataclass(slots=True)
class _Row:
    seq: int
    parent: int | None
    entry_id: str | None
    role: str
    message: bool  # a ``message`` line
    segment: int | None
    depth: int | None
    raw: str | None = None  # the line, for the roles steps read
    parsed: Any = None  # the line's value while it is worked on (dropped after: a whole session's
    # parsed lines would double an import's memory)
    calls: dict[str, tuple[str, Mapping[str, Any]]] | None = None  # an assistant's file-tool calls

    @property
    def value(self) -> Any:
        if self.parsed is None and self.raw is not None:
            self.parsed = _parsed(self.raw)
        return self.parsed


# A file's kinds of touch so far, one bit each in the files view's order (``KIND_BITS[kind]``).
KIND_BITS = {"created": 1, "written": 2, "edited": 4, "read": 8}
CHANGES = frozenset(("created", "written", "edited"))


@dataclass(frozen=True, slots=True)
class _Kept:
    """A step already written (or written by this batch), as the next steps of its file need it."""

    seq: int
    segment: int
    depth: int
    known: bool
    resets: bool
    prev_seq: int | None
    call_seq: int | None
    # The file's totals on the path down to this step: kinds (bits), lines added, removed, changes,
    # reads, and the path's command count when its text was last made known or unknown.
    totals: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)


class _ByRow:
    """An integer per row: the rows fed in order from ``first`` in an array (8 bytes each, not a dict
    entry and an int object), any other in a dict."""

    __slots__ = ("first", "other", "values")
    _UNSET = -(1 << 63)

    def __init__(self, first: int) -> None:
        self.first = first
        self.values = array("q")
        self.other: dict[int, int] = {}

    def __contains__(self, seq: int) -> bool:
        at = seq - self.first
        if 0 <= at < len(self.values):
            return self.values[at] != self._UNSET
        return seq in self.other

    def __getitem__(self, seq: int) -> int:
        at = seq - self.first
        if 0 <= at < len(self.values) and self.values[at] != self._UNSET:
            return self.values[at]
        return self.other[seq]

    def __setitem__(self, seq: int, value: int) -> None:
        at = seq - self.first
        if at == len(self.values):
            self.values.append(value)
        elif 0 <= at < len(self.values):
            self.values[at] = value
        else:
            self.other[seq] = value


class _Offline(Exception):
    """A step needs a stored row while the database is busy storing the session (see ``NewSteps``)."""


class _Writer:
    """Works out the steps of a batch of rows, in append order, from them and from the rows above."""

    def __init__(
        self, session: ChatSession, first_seq: int, *, streaming: bool = False, offline: bool = False
    ) -> None:
        self.session = session
        self.first_seq = first_seq
        self.streaming = streaming
        # Fed while the rows are being copied in: no query may run, the steps wait for ``write``.
        self.offline = offline
        self.rows: dict[int, _Row] = {}
        self.batch: dict[str, list[_Kept]] = {}  # file → its steps in this batch, oldest first
        self.stored: dict[str, dict[int, _Kept]] = {}  # file → its steps before the batch, by seq
        self.latest: dict[str, tuple[int, str]] = {}  # file → (step, text after it) of its newest known step
        # The text after each known step, while they fit: a branch that goes back to a file an earlier
        # branch touched since needs its text at an older step (reading lines again during an import
        # cost 30 ms a query, the planner not knowing the new session yet).
        # Compressed: an import kept 30 MB of them for 100k entries, a third of its memory past the scan.
        self.texts: dict[int, bytes] = {}
        self.text_bytes = 0
        # Where a whole session's texts go instead (``NewSteps``): seq → (offset, length) in the file.
        self.text_file: IO[bytes] | None = None
        self.text_spots: dict[int, tuple[int, int]] = {}
        self.out: list[tuple[Any, ...]] = []  # steps not written yet
        self.written = 0
        self.changed: set[str] = set()  # files the steps changed (created, written, edited)
        self.counts = _ByRow(first_seq)  # row → shell commands on its path, itself included
        # Streaming: each row's parent once it is passed (-1: a root), so the rows kept are only the
        # assistants whose file calls wait for results (every row held 21 MB of a 100k-entry import).
        self.parents = _ByRow(first_seq)
        self.preloaded = first_seq == 0  # nothing is stored before a whole session
        self.chains: dict[int, dict[int, int]] = {}

    @cached_property
    def table(self) -> SegmentTable:
        """The session's segments (read only if a step needs to know what lies on a path)."""
        return segment_table(self.session)

    # -- rows ----------------------------------------------------------------------------------------

    def feed(self, row: _Row) -> None:
        """Work out the steps of the next row, in append order (its parent came before it)."""
        self.rows[row.seq] = row
        self.counts[row.seq] = self._commands_above(row)
        if row.role == "toolResult":
            self._result(row)
        elif row.role == "bashExecution":
            self._user_command(row)
        elif row.role == "assistant":
            self._calls(row)
        row.parsed = None
        if self.streaming:
            # Only what later rows need stays: a whole session's lines would double the memory of its
            # import. A text rebuilt from an earlier step reads its lines again (they are stored).
            row.raw = None
            self.parents[row.seq] = -1 if row.parent is None else row.parent
            if not row.calls:
                del self.rows[row.seq]
            if len(self.out) >= FLUSH_ROWS and not self.offline:
                self.write()

    def _row(self, seq: int) -> _Row | None:
        row = self.rows.get(seq)
        if row is None:
            self._read([seq])
            row = self.rows.get(seq)
        return row

    def _read(self, seqs: Iterable[int]) -> None:
        """Read rows above the batch; an assistant's or a result's line too (others are not needed)."""
        wanted = [s for s in set(seqs) if s not in self.rows or self.rows[s].raw is None]
        if not wanted:
            return
        if self.offline:
            raise _Offline
        found = (
            Entry.objects.filter(session=self.session, seq__in=wanted)
            .annotate(line=Case(When(type="message", role__in=ROLES[:2], then=F("raw")), default=None))
            .values_list("seq", "parent_seq", "entry_id", "type", "role", "segment", "depth", "line")
        )
        for seq, parent, entry_id, kind, role, segment, depth, line in found:
            self.rows[seq] = _Row(seq, parent, entry_id, role or "", kind == "message", segment, depth, line)

    # -- steps ---------------------------------------------------------------------------------------

    def _commands_above(self, row: _Row) -> int:
        """Return how many shell commands the path above ``row`` ran (its parent's running count)."""
        if row.parent is None:
            return 0
        if row.parent in self.counts:
            return self.counts[row.parent]
        if self.offline:
            raise _Offline
        parent = self._row(row.parent)
        if parent is None or parent.segment is None or parent.depth is None:
            return 0
        ranges = path_ranges(
            self.session, Entry(segment=parent.segment, depth=parent.depth), table=self.table
        )
        # The nearest step above holds the count: one backward index probe per segment, deepest first
        # (usually the first finds it), not a sort of the whole path's steps.
        count = 0
        for segment, low, high in ranges:
            nearest = (
                FileStep.objects.filter(
                    session=self.session, segment=segment, depth__gte=low, depth__lte=high
                )
                .order_by("-depth")
                .values_list("commands", flat=True)
                .first()
            )
            if nearest is not None:
                count = nearest
                break
        self.counts[row.parent] = count
        return count

    def _message(self, row: _Row) -> Mapping[str, Any] | None:
        if not row.message or not isinstance(row.value, Mapping) or not isinstance(row.entry_id, str):
            return None
        message = row.value.get("message")
        return message if isinstance(message, Mapping) else None

    def _user_command(self, row: _Row) -> None:
        message = self._message(row)
        step = user_command(message) if message is not None else None
        if step is not None and row.segment is not None and row.depth is not None:
            self._emit(row, None, None, step, None)

    def _call(self, row: _Row, call_id: str) -> tuple[_Row, str, Mapping[str, Any]] | None:
        """Return the assistant row above ``row`` that asked for ``call_id``, with the call's tool and
        arguments (a file tool's only, as the walk keeps them)."""
        seq = row.parent
        for _ in range(UP_ROUNDS):
            if seq is None:
                return None
            above = self.rows.get(seq)
            if above is None and seq in self.parents:
                # Passed, with no file call waiting: only the way up matters.
                seq = self.parents[seq]
                seq = None if seq < 0 else seq
                continue
            above = self._row(seq)
            if above is None:
                return None
            if above.role == "assistant":
                # Taken, as the walk takes a call once its result comes: later results do not need it.
                calls = self._calls(above)
                call = calls.pop(call_id, None)
                if call is not None:
                    if not calls and self.streaming and above.seq in self.parents:
                        del self.rows[above.seq]
                    return above, call[0], call[1]
            seq = above.parent
        return None

    def _calls(self, row: _Row) -> dict[str, tuple[str, Mapping[str, Any]]]:
        """Return an assistant row's file-tool calls by id that no result took yet (its parsed line is
        not kept)."""
        if row.calls is None:
            row.calls = _file_calls(self._message(row)) if row.raw and '"toolCall"' in row.raw else {}
            row.parsed = None
        return row.calls

    def _result(self, row: _Row) -> None:
        message = self._message(row)
        if message is None or row.segment is None or row.depth is None:
            return
        assert row.entry_id is not None  # _message checked it
        found = self._call(row, str(message.get("toolCallId")))
        if found is None:
            return
        call_row, name, arguments = found
        walk = FilesWalk(self.session.cwd)
        absolute = call_target(name, arguments, self.session.cwd)
        prior = self._prior(storable_copy(absolute), row) if absolute is not None else None
        if absolute is not None and prior is not None:
            walk.seed(absolute, self._text_after(storable_copy(absolute), prior))
        step = walk.apply_result(call_row.entry_id, name, arguments, message, row.entry_id)
        if step is None:
            return
        self._emit(row, call_row, prior, step, walk.files[absolute].content if absolute else None)

    def _emit(self, row: _Row, call: _Row | None, prior: _Kept | None, step: Step, text: str | None) -> None:
        assert row.segment is not None and row.depth is not None and row.entry_id is not None
        prev = prior.seq if prior is not None else None
        # Files are kept under a path the database can hold; readers look them up by it.
        absolute = storable_copy(step.absolute)
        if step.kind == "command":
            self.counts[row.seq] += 1
        kinds, added, removed, changes, reads, known_at = prior.totals if prior is not None else (0,) * 6
        totals = (
            kinds | KIND_BITS.get(step.kind, 0),
            added + step.added,
            removed + step.removed,
            changes + (step.kind in CHANGES),
            reads + (step.kind == "read"),
            self.counts[row.seq] if step.resets else known_at,
        )
        self.out.append(
            (
                self.session.pk,
                row.seq,
                row.segment,
                row.depth,
                storable_copy(row.entry_id),
                call.seq if call is not None else None,
                storable_copy(call.entry_id) if call is not None and call.entry_id is not None else None,
                step.kind,
                absolute,
                file_hash(absolute) if absolute else 0,
                storable_copy(step.path),
                step.added,
                step.removed,
                step.known,
                step.resets,
                prev,
                step.failed,
                step.by_user,
                storable_copy(step.command),
                self.counts[row.seq],
                *totals,
            )
        )
        if step.kind in CHANGES:
            self.changed.add(absolute)
        if absolute:
            call_seq = call.seq if call else None
            kept = _Kept(row.seq, row.segment, row.depth, step.known, step.resets, prev, call_seq, totals)
            self.batch.setdefault(absolute, []).append(kept)
            if text is not None:
                self.latest[absolute] = (row.seq, text)
                self._keep_text(row.seq, text)
            else:
                self.latest.pop(absolute, None)

    def _keep_text(self, seq: int, text: str) -> None:
        packed = zlib.compress(text.encode("utf-8", "surrogatepass"), 1)
        if self.text_file is not None:
            self.text_spots[seq] = (self.text_file.seek(0, 2), len(packed))
            self.text_file.write(packed)
        elif self.text_bytes + len(packed) <= TEXT_BYTES:
            self.texts[seq] = packed
            self.text_bytes += len(packed)

    def _kept_text(self, seq: int) -> bytes | None:
        spot = self.text_spots.get(seq)
        if spot is None or self.text_file is None:
            return self.texts.get(seq)
        self.text_file.seek(spot[0])
        return self.text_file.read(spot[1])

    def preload(self) -> None:
        """Read every step stored before the batch at once (a long batch touches most files)."""
        rows = FileStep.objects.filter(session=self.session, seq__lt=self.first_seq).exclude(absolute="")
        self.stored = {}
        for seq, absolute, segment, depth, known, resets, prev, call, *totals in rows.values_list(
            "seq", "absolute", "segment", "depth", "known", "resets", "prev_seq", "call_seq", *_TOTALS
        ):
            kinds, added, removed, changes, reads, known_at = totals
            self.stored.setdefault(absolute, {})[seq] = _Kept(
                seq,
                segment,
                depth,
                known,
                resets,
                prev,
                call,
                (kinds, added, removed, changes, reads, known_at),
            )
        self.preloaded = True

    def _stored(self, absolute: str) -> dict[int, _Kept]:
        stored = self.stored.get(absolute)
        if stored is None and self.preloaded:
            stored = self.stored[absolute] = {}
        if stored is None:
            rows = FileStep.objects.filter(
                session=self.session, file_hash=file_hash(absolute), absolute=absolute, seq__lt=self.first_seq
            ).values_list("seq", "segment", "depth", "known", "resets", "prev_seq", "call_seq", *_TOTALS)
            stored = self.stored[absolute] = {}
            for seq, segment, depth, known, resets, prev, call, *totals in rows:
                kinds, added, removed, changes, reads, known_at = totals
                stored[seq] = _Kept(
                    seq,
                    segment,
                    depth,
                    known,
                    resets,
                    prev,
                    call,
                    (kinds, added, removed, changes, reads, known_at),
                )
        return stored

    def _above(self, segment: int) -> dict[int, int]:
        """Return, for ``segment`` and each segment above it, the deepest depth of it on the way down to
        ``segment`` (a segment is a run of first children, so any earlier row of ``segment`` itself is
        above a row of it)."""
        found = self.chains.get(segment)
        if found is None:
            found = {}
            high = 1 << 62
            current: int | None = segment
            while current is not None and current in self.table:
                parent, start, _ = self.table[current]
                found[current] = high
                high = start - 1
                current = parent
            self.chains[segment] = found
        return found

    def _prior(self, absolute: str, row: _Row) -> _Kept | None:
        """Return the file's nearest step above ``row`` on its path."""
        assert row.segment is not None and row.depth is not None
        above = self._above(row.segment)

        def on_path(kept: _Kept) -> bool:
            high = above.get(kept.segment)
            return high is not None and kept.depth <= high

        for kept in reversed(self.batch.get(absolute, [])):
            if kept.seq < row.seq and on_path(kept):
                return kept
        for seq in sorted(self._stored(absolute), reverse=True):
            kept = self.stored[absolute][seq]
            if on_path(kept):
                return kept
        return None

    def _kept(self, absolute: str, seq: int) -> _Kept:
        for kept in self.batch.get(absolute, []):
            if kept.seq == seq:
                return kept
        return self._stored(absolute)[seq]

    def _text_after(self, absolute: str, prior: _Kept) -> str | None:
        """Return the file's text after ``prior`` (None: not known), from the lines of the steps since
        the branch last read or wrote it whole."""
        if not prior.known:
            return None
        latest = self.latest.get(absolute)
        if latest is not None and latest[0] == prior.seq:
            return latest[1]
        packed = self._kept_text(prior.seq)
        if packed is not None:
            return zlib.decompress(packed).decode("utf-8", "surrogatepass")
        chain = [prior]
        while not chain[-1].resets and chain[-1].prev_seq is not None:
            chain.append(self._kept(absolute, chain[-1].prev_seq))
        chain.reverse()
        self._read([s for kept in chain for s in (kept.seq, kept.call_seq) if s is not None])
        walk = FilesWalk(self.session.cwd)
        for kept in chain:
            row = self.rows[kept.seq]
            call_row = self.rows.get(kept.call_seq) if kept.call_seq is not None else None
            message = self._message(row)
            if message is None or call_row is None or call_row.raw is None:
                return None
            # From the call's line itself: a call whose result was worked on is no longer kept.
            call = _file_calls(self._message(call_row)).get(str(message.get("toolCallId")))
            call_row.parsed = None
            if call is None:
                return None
            assert row.entry_id is not None
            walk.apply_result(call_row.entry_id, call[0], call[1], message, row.entry_id)
        touch = walk.files.get(absolute)
        return touch.content if touch is not None else None

    # -- writing -------------------------------------------------------------------------------------

    def write(self) -> None:
        """Write the steps worked out so far."""
        if not self.out or self.offline:
            return
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql" and len(self.out) > 100:
                with cursor.cursor.copy(f"COPY {_TABLE} ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                    for values in self.out:
                        copy.write_row(values)
            else:
                marks = ", ".join(["%s"] * len(_COLUMNS))
                cursor.executemany(
                    f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                    self.out,
                )
        self.written += len(self.out)
        self.out = []


def _file_calls(message: Mapping[str, Any] | None) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Return an assistant message's file-tool calls by id: (tool, arguments), as the walk keeps them."""
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    content = message.get("content") if message is not None else None
    for block in content if isinstance(content, list) else []:
        if (
            isinstance(block, Mapping)
            and block.get("type") == "toolCall"
            and isinstance(block.get("id"), str)
            and block.get("name") in FILE_TOOLS
            and isinstance(block.get("arguments"), Mapping)
        ):
            found[block["id"]] = (str(block["name"]), block["arguments"])
    return found


def _missing(session_pk: int, after: Any, before: Any) -> Any:
    """Rows of the session past ``after`` and before ``before`` that make steps (tool results and user
    commands): a gap holding none lost nothing."""
    return Entry.objects.filter(
        session_id=session_pk, seq__gt=after, seq__lt=before, type="message", role__in=STEP_ROLES
    )


def _advance(session: ChatSession, first_seq: int, last_seq: int) -> bool:
    """Move the session's mark to ``last_seq`` if every row before ``first_seq`` that makes steps has
    them; False if not (the previous release stored some: leave them to ``extend``). Appends holding no
    such row store no steps and may not tell this module at all, so a gap of other rows is no loss. The
    caller holds the session row."""
    moved = (
        ChatSession.with_deleted.filter(pk=session.pk, file_steps_through__lt=first_seq)
        .exclude(Exists(_missing(session.pk, OuterRef("file_steps_through"), first_seq)))
        .update(file_steps_through=last_seq)
    )
    if moved:
        session.file_steps_through = last_seq
    return bool(moved)


def complete_through(session: ChatSession, seq: int) -> bool:
    """Return whether every row up to ``seq`` that makes steps has them (the files view may sum them)."""
    mark = session.file_steps_through
    if mark is None:
        return False
    return seq <= mark or not _missing(session.pk, mark, seq + 1).exists()


def record(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Write the steps of appended rows (receiver of ``entries_stored``; a whole session is
    ``record_new``'s)."""
    if rows is None or not _advance(session, first_seq, last_seq):
        return
    writer = _Writer(session, first_seq)
    for entry in rows:
        raw = entry.raw if entry.role in ROLES else None
        is_message = entry.type == "message"
        writer.feed(
            _Row(
                entry.seq,
                entry.parent_seq,
                entry.entry_id,
                entry.role,
                is_message,
                entry.segment,
                entry.depth,
                raw,
            )
        )
    writer.write()


def record_new(session: ChatSession) -> None:
    """Write the steps of a session just stored whole (import, fork, clone), reading its lines back a
    batch at a time; the caller holds the session row."""
    if session.next_seq == 0 or not _advance(session, 0, session.next_seq - 1):
        return
    writer = _Writer(session, 0, streaming=True)
    for row in _stored_rows(session, -1):
        writer.feed(row)
    writer.write()
    # The same rules name the files the session changed, on all its branches: the list's count.
    changed_files.add_paths(session, writer.changed)


class NewSteps:
    """The steps of a whole session worked out from its rows as they are copied in (``feed``), so an
    import need not read its lines back: the client is mostly idle while the server stores them.

    Nothing is queried until ``stored``. A step that would need a stored row gives up the attempt (none
    should: every text is kept, in a temporary file); ``finish`` then works them out as ``record_new``
    does. Use it as a context manager: the steps and texts wait in temporary files.
    """

    def __init__(self, session: ChatSession, segments: Iterable[tuple[int, int | None, int]]) -> None:
        self.session = session
        writer = _Writer(session, 0, streaming=True, offline=True)
        # Only a segment's parent and start depth are read (the third field is for path queries).
        writer.table = {index: (parent, start, None) for index, parent, start in segments}
        self.writer: _Writer | None = writer
        # The steps and the files' texts wait on disk (29 MB for a 100k-entry import held in memory);
        # both files are closed by ``close`` (``with``, or giving up).
        self.spool = tempfile.TemporaryFile()  # noqa: SIM115
        writer.text_file = self.texts = tempfile.TemporaryFile()  # noqa: SIM115
        self.done = False

    def feed(
        self,
        seq: int,
        parent: int | None,
        entry_id: str | None,
        kind: str,
        role: str,
        segment: int | None,
        depth: int | None,
        raw: str,
    ) -> None:
        """Take the next stored row, in append order."""
        if self.writer is None:
            return
        is_message = kind == "message"
        line = raw if is_message and role in ROLES else None
        try:
            self.writer.feed(_Row(seq, parent, entry_id, role, is_message, segment, depth, line))
        except _Offline:
            self.close()  # worked out again from the stored lines by ``finish``
            return
        if len(self.writer.out) >= FLUSH_ROWS:
            # Length-prefixed: marshal.load on a file reads it an object at a time (21 ms a batch).
            packed = marshal.dumps(self.writer.out)
            self.spool.write(len(packed).to_bytes(8, "little"))
            self.spool.write(packed)
            self.writer.out = []

    def stored(self, count: int) -> None:
        """Write the steps once the session's ``count`` rows are stored (and free what they held); the
        caller holds the session row."""
        writer, self.writer = self.writer, None
        if writer is None or count == 0 or not _advance(self.session, 0, count - 1):
            return
        writer.offline = False
        held, end = writer.out, self.spool.tell()
        self.spool.seek(0)
        while self.spool.tell() < end:
            size = int.from_bytes(self.spool.read(8), "little")
            writer.out = marshal.loads(self.spool.read(size))
            writer.write()
        writer.out = held
        writer.write()
        changed_files.add_paths(self.session, writer.changed)
        self.done = True

    def close(self) -> None:
        self.writer = None
        self.spool.close()
        self.texts.close()

    def __enter__(self) -> NewSteps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finish(self) -> None:
        """Work the steps out from the stored lines if the rows could not give them; call it once the
        session's segments, tool calls and counters are stored too."""
        if not self.done:
            record_new(self.session)


def _stored_rows(session: ChatSession, after: int) -> Iterator[_Row]:
    """Yield the session's rows past ``after`` in append order, with the lines steps read: tool results,
    user commands, and the assistant messages that made a read, edit or write call (named by the index of
    tool calls, written with them), never the other answers."""
    # The calling lines are named by a list of seqs, not by a join with the index of calls: inside an
    # import's transaction the planner sees the session as empty and chose a nested loop over every call
    # for every row (a 100k-entry import stalled for minutes).
    calls = list(
        ToolUse.objects.filter(session=session, call_seq__gt=after, tool__in=FILE_CALLS)
        .values_list("call_seq", flat=True)
        .distinct()
    )
    entries = Entry._meta.db_table
    roles = ", ".join(["%s"] * len(STEP_ROLES))
    # One pass over the session, each row one probe: PostgreSQL hashes a constant array, SQLite indexes
    # the list once.
    named: tuple[str, Any] = (
        ("e.seq = ANY(%s::int[])", calls)
        if connection.vendor == "postgresql"
        else ("e.seq IN (SELECT value FROM json_each(%s))", orjson.dumps(calls).decode())
    )
    sql = (
        "SELECT e.seq, e.parent_seq, e.entry_id, e.type, e.role, e.segment, e.depth, "
        f"CASE WHEN e.type = 'message' AND (e.role IN ({roles}) OR {named[0]}) THEN e.raw END "
        f"FROM {entries} e WHERE e.session_id = %s AND e.seq > %s ORDER BY e.seq"
    )
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [*STEP_ROLES, named[1], session.pk, after])
        while batch := cursor.fetchmany(500):
            for seq, parent, entry_id, kind, role, segment, depth, line in batch:
                yield _Row(seq, parent, entry_id, role or "", kind == "message", segment, depth, line)


def extend(session: ChatSession) -> bool:
    """Write the steps the session lacks (stored before the steps existed, or appended to by a release
    that did not keep them); the caller holds the session row. Return whether any were written."""
    last = session.next_seq - 1
    mark = session.file_steps_through
    if mark is not None and mark >= last:
        return False
    if mark is None:
        FileStep.objects.filter(session=session).delete()
        ChatSession.with_deleted.filter(pk=session.pk).update(file_steps_through=-1)
        mark = -1
    writer = _Writer(session, mark + 1, streaming=True)
    writer.preload()
    for row in _stored_rows(session, mark):
        writer.feed(row)
    writer.write()
    ChatSession.with_deleted.filter(pk=session.pk).update(file_steps_through=last)
    session.file_steps_through = last
    return writer.written > 0


def rebuild(session: ChatSession) -> None:
    """Write the session's steps again from its lines (a redaction rewrote some); the caller holds the
    session row."""
    FileStep.objects.filter(session=session).delete()
    ChatSession.with_deleted.filter(pk=session.pk).update(file_steps_through=None)
    session.file_steps_through = None
    extend(session)


def rewritten(session: ChatSession, seqs: Sequence[int]) -> None:
    """Lines were rewritten in place (a redaction): write the steps again if any were worked out from
    them; the caller holds the session row."""
    if FileStep.objects.filter(Q(seq__in=seqs) | Q(call_seq__in=seqs), session=session).exists():
        rebuild(session)


def on_path(session_pk: int, ranges: Sequence[tuple[int, int, int]]) -> tuple[str, list[Any]]:
    """Return (a ``FROM`` source, its parameters) of the session's steps on the path these ranges
    (``path_ranges``) make up, as ``s``."""
    if connection.vendor == "postgresql" and len(ranges) > 8:
        # One index range scan per segment: a join the planner chose freely compared every step with
        # every range (3M comparisons for a 100k path of 193 segments).
        segments, lows, highs = (list(column) for column in zip(*ranges, strict=True))
        source = (
            "(SELECT f.* FROM unnest(%s::int[], %s::int[], %s::int[]) AS r(seg, lo, hi) CROSS JOIN LATERAL "
            f"(SELECT * FROM {_TABLE} x WHERE x.session_id = %s AND x.segment = r.seg "
            "AND x.depth BETWEEN r.lo AND r.hi) f) s"
        )
        return source, [segments, lows, highs, session_pk]
    terms = " OR ".join(["(x.segment = %s AND x.depth BETWEEN %s AND %s)"] * len(ranges))
    source = f"(SELECT * FROM {_TABLE} x WHERE x.session_id = %s AND ({terms})) s"
    return source, [session_pk, *(value for item in ranges for value in item)]
