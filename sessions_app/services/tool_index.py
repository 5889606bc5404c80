"""The index of work (``ToolUse``): written with the entries, by every way the entry store has in.

What an entry says about tools is the domain's (``pitree.tool_uses``); this module pairs calls with their
results and writes the rows: a call and its result stored together give one complete row; a call alone
gives a row its result completes later (an API append or a sync push usually stores them apart); a result
whose call was stored before completes that row. The PostgreSQL chain append runs the same writes as two
more statements of its pipeline (``chain_statements``), so an append still takes one round trip.

Sessions stored before the index existed, or written by the previous release during an upgrade, are
rebuilt by ``manage.py reconcile`` (``reconcile_session``).
"""

from __future__ import annotations

import itertools
import marshal
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from pitree.jsjson import parse_json
from pitree.tool_uses import Facts, ToolResult, says_anything, shown_path, tool_facts
from sessions_app.models import ChatSession, ToolUse

__all__ = [
    "Said",
    "Spool",
    "chain_params",
    "chain_statements",
    "facts_of",
    "rebuild_session",
    "reconcile_session",
    "record",
    "record_entries",
    "record_spooled",
    "refresh_calls",
]

_TABLE = ToolUse._meta.db_table
_COLUMNS = (
    "session_id",
    "call_seq",
    "call_id",
    "tool",
    "path",
    "absolute",
    "command",
    "result_seq",
    "result_entry_id",
    "failed",
)
SPOOL_ROWS = 2000  # rows a spool holds in memory before writing them to its file
# (seq, entry id, facts) of an entry that says something about tools.
Said = tuple[int, str | None, Facts]


@dataclass(frozen=True, slots=True)
class _Pending:
    """Results whose call was stored before: (seq, entry id, result) each."""

    results: list[tuple[int, str | None, ToolResult]]


def facts_of(items: Iterable[tuple[int, str | None, Any]]) -> list[Said]:
    """Return the facts of the entries (seq, entry id, parsed line) that say anything about tools."""
    out: list[Said] = []
    for seq, entry_id, value in items:
        if says_anything(facts := tool_facts(value)):
            out.append((seq, entry_id, facts))
    return out


class _Pairing:
    """Pairs calls with their results in append order; a row goes to ``out`` once nothing more can change
    it (its result came, a newer call took its id, or the batch ended). A row's path is the raw argument;
    the writer shows it."""

    def __init__(self, out: Callable[[list[Any]], None]) -> None:
        self.out = out
        self.open: dict[str, list[Any]] = {}  # call id → its row, until a result answers it
        self.leftover: list[tuple[int, str | None, ToolResult]] = []

    def add(self, seq: int, entry_id: str | None, facts: Facts) -> None:
        calls, result, command = facts
        named: set[str] = set()
        for call in calls:
            if call.call_id in named:
                continue  # one message naming an id twice: one call, as the unique key has it
            named.add(call.call_id)
            # The newest call with an id is the one a result answers (as ``pitree.files`` pairs them).
            older = self.open.get(call.call_id)
            if older is not None:
                self.out(older)
            self.open[call.call_id] = [
                seq,
                call.call_id,
                call.tool,
                call.path,
                call.command,
                None,
                None,
                False,
            ]
        if result is not None:
            answered = self.open.pop(result.call_id, None)
            if answered is None:
                self.leftover.append((seq, entry_id, result))
            else:
                answered[5:] = [seq, entry_id, result.failed]
                self.out(answered)
        if command is not None:
            self.out([seq, "", "bash", "", command.command, seq, entry_id, False])

    def end(self) -> None:
        for row in self.open.values():
            self.out(row)
        self.open.clear()


def _shown(session_id: int, cwd: str, rows: Iterable[list[Any]]) -> Iterator[tuple[Any, ...]]:
    """Yield the table's rows: the paths shown as the Files panel shows them."""
    # A session names the same few files over and over: each is resolved once (half of an import's time
    # here went to resolving paths).
    paths: dict[str, tuple[str, str]] = {}
    for seq, call_id, tool, raw, command, result_seq, result_id, failed in rows:
        shown = paths.get(raw)
        if shown is None:
            shown = paths[raw] = shown_path(raw, cwd)
        yield (session_id, seq, call_id, tool, shown[0], shown[1], command, result_seq, result_id, failed)


def _rows(session_id: int, cwd: str, said: Iterable[Said]) -> tuple[list[tuple[Any, ...]], _Pending]:
    """Pair the batch's calls with its results; return the rows to insert and the results left over."""
    rows: list[list[Any]] = []
    pairing = _Pairing(rows.append)
    for seq, entry_id, facts in said:
        pairing.add(seq, entry_id, facts)
    pairing.end()
    return list(_shown(session_id, cwd, rows)), _Pending(pairing.leftover)


class Spool:
    """What a whole session's lines say about tools, paired as the lines are read (``add``, in append
    order) and kept in a temporary file until ``record_spooled`` writes them: an import held them in
    memory for the whole copy (37 MB of a 100k-entry file's import)."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by ``close``)
        self.batch: list[list[Any]] = []
        self.pairing = _Pairing(self._out)

    def add(self, seq: int, entry_id: str | None, facts: Facts) -> None:
        self.pairing.add(seq, entry_id, facts)

    def _out(self, row: list[Any]) -> None:
        self.batch.append(row)
        if len(self.batch) >= SPOOL_ROWS:
            self._flush()

    def _flush(self) -> None:
        # Length-prefixed, as ``file_steps`` spools: marshal.load on a file reads an object at a time.
        packed = marshal.dumps(self.batch)
        self.file.write(len(packed).to_bytes(8, "little"))
        self.file.write(packed)
        self.batch = []

    def rows(self) -> Iterator[list[Any]]:
        """Yield every row, the calls still open at the end included (call it once)."""
        self.pairing.end()
        self._flush()
        end = self.file.tell()
        self.file.seek(0)
        while self.file.tell() < end:
            size = int.from_bytes(self.file.read(8), "little")
            yield from marshal.loads(self.file.read(size))

    def close(self) -> None:
        self.file.close()


def record_spooled(session: ChatSession, spool: Spool) -> None:
    """Index a whole new session's spooled rows, in its transaction (the caller closes the spool)."""
    _copy(_shown(session.pk, session.cwd, spool.rows()))
    for seq, entry_id, result in spool.pairing.leftover:
        _complete(session.pk, seq, entry_id, result)


def record(session: ChatSession, said: Sequence[Said]) -> None:
    """Index a batch stored in this transaction: its calls, and the results of calls stored before."""
    if not said:
        return
    rows, pending = _rows(session.pk, session.cwd, said)
    _write(rows)
    for seq, entry_id, result in pending.results:
        _complete(session.pk, seq, entry_id, result)


def record_entries(session: ChatSession, items: Iterable[tuple[int, str | None, Any]]) -> None:
    """Index entries just stored: (seq, entry id, parsed line) each, in append order."""
    record(session, facts_of(items))


def _complete(session_id: int, seq: int, entry_id: str | None, result: ToolResult) -> None:
    # The newest call with the id before the result is the one it answers, if still open (as a batch pairs).
    newest = (
        ToolUse.objects.filter(session_id=session_id, call_id=result.call_id, call_seq__lt=seq)
        .order_by("-call_seq")
        .values_list("call_seq", "result_seq")
        .first()
    )
    if newest is not None and newest[1] is None:
        ToolUse.objects.filter(session_id=session_id, call_id=result.call_id, call_seq=newest[0]).update(
            result_seq=seq, result_entry_id=entry_id, failed=result.failed
        )


def _write(rows: Sequence[tuple[Any, ...]]) -> None:
    if not rows:
        return
    if connection.vendor == "postgresql" and len(rows) > 100:
        _copy(rows)
        return
    with connection.cursor() as cursor:
        marks = ", ".join(["%s"] * len(_COLUMNS))
        conflict = " ON CONFLICT DO NOTHING"
        cursor.executemany(f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({marks}){conflict}", rows)


def _copy(rows: Iterable[tuple[Any, ...]]) -> None:
    """Write rows of a new session (none can conflict); by COPY on PostgreSQL, as its entries went in."""
    if connection.vendor != "postgresql":
        for batch in itertools.batched(rows, 2000):
            _write(batch)
        return
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {_TABLE} ({', '.join(_COLUMNS)}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def refresh_calls(session: ChatSession, values: Iterable[tuple[int, Any]]) -> None:
    """Rewrite the rows of entries rewritten in place (a redaction): (seq, parsed line) each. Their
    paths and commands lose what the lines lost; which calls they are and their results stay."""
    for seq, value in values:
        calls, _, command = tool_facts(value)
        for call in calls:
            path, absolute = shown_path(call.path, session.cwd)
            ToolUse.objects.filter(session=session, call_seq=seq, call_id=call.call_id).update(
                path=path, absolute=absolute, command=call.command
            )
        if command is not None:
            ToolUse.objects.filter(session=session, call_seq=seq, call_id="").update(command=command.command)


# -- the PostgreSQL chain append ----------------------------------------------------------------------

# Where the chain went: its first entry, found as the context sums find it (``context_sums.CHAIN_SQL``);
# a refused append leaves no row there with that id at that place, or an older one, whose calls are
# indexed already (the unique key and ``result_seq IS NULL`` make the statements add nothing then).
_FIRST = (
    "WITH f AS (SELECT e.seq AS first FROM sessions_app_chatsession c JOIN sessions_app_entry e "
    "ON e.session_id=c.id AND e.seq=c.next_seq-%(n)s AND e.entry_id=%(sum_first)s WHERE c.id=%(pk)s)"
)
_CHAIN_CALLS = (
    f"{_FIRST} INSERT INTO {_TABLE} ({','.join(_COLUMNS)}) "
    "SELECT %(pk)s,f.first+b.at,b.call_id,b.tool,b.path,b.absolute,b.command,f.first+b.result_at,"
    "b.result_entry_id,b.failed FROM f,unnest(%(tu_at)s::int[],%(tu_call)s::text[],%(tu_tool)s::text[],"
    "%(tu_path)s::text[],%(tu_absolute)s::text[],%(tu_command)s::text[],%(tu_result_at)s::int[],"
    "%(tu_result_id)s::text[],%(tu_failed)s::bool[]) AS b(at,call_id,tool,path,absolute,command,result_at,"
    "result_entry_id,failed) ON CONFLICT DO NOTHING"
)
_CHAIN_RESULTS = (
    f"{_FIRST} UPDATE {_TABLE} AS t SET result_seq=f.first+b.at,result_entry_id=b.entry_id,failed=b.failed "
    "FROM f,unnest(%(tr_at)s::int[],%(tr_call)s::text[],%(tr_id)s::text[],%(tr_failed)s::bool[]) "
    "AS b(at,call_id,entry_id,failed) WHERE t.session_id=%(pk)s AND t.call_id=b.call_id "
    "AND t.result_seq IS NULL AND t.call_seq=(SELECT max(u.call_seq) FROM "
    f"{_TABLE} u WHERE u.session_id=%(pk)s AND u.call_id=b.call_id AND u.call_seq<f.first+b.at)"
)


def chain_params(session: ChatSession, values: Sequence[Any]) -> dict[str, Any]:
    """Return the chain statements' parameters; ``values`` are the chain's lines (seq = position)."""
    said = facts_of((at, v.get("id") if isinstance(v, dict) else None, v) for at, v in enumerate(values))
    if not said:
        return {"tu_at": [], "tr_at": []}
    rows, pending = _rows(0, session.cwd, said)
    columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)] if rows else [[]] * len(_COLUMNS)
    return {
        "tu_at": columns[1],
        "tu_call": columns[2],
        "tu_tool": columns[3],
        "tu_path": columns[4],
        "tu_absolute": columns[5],
        "tu_command": columns[6],
        "tu_result_at": columns[7],
        "tu_result_id": columns[8],
        "tu_failed": columns[9],
        "tr_at": [seq for seq, _, _ in pending.results],
        "tr_call": [r.call_id for _, _, r in pending.results],
        "tr_id": [entry_id for _, entry_id, _ in pending.results],
        "tr_failed": [r.failed for _, _, r in pending.results],
    }


def chain_statements(params: dict[str, Any]) -> list[str]:
    """Return the statements the chain's pipeline runs after storing it (none for a chain without tools)."""
    out = []
    if params["tu_at"]:
        out.append(_CHAIN_CALLS)
    if params["tr_at"]:
        out.append(_CHAIN_RESULTS)
    return out


# -- sessions stored before the index --------------------------------------------------------------------


def _expected(session: ChatSession, chunk: int = 2000) -> list[tuple[Any, ...]]:
    """Return the rows the session's entries give, read a chunk at a time (only tool facts are kept)."""

    def items() -> Iterator[tuple[int, str | None, Any]]:
        with connection.cursor() as reader:
            reader.execute(
                "SELECT seq, entry_id, raw FROM sessions_app_entry WHERE session_id = %s ORDER BY seq",
                [session.pk],
            )
            while batch := reader.fetchmany(chunk):
                for seq, entry_id, raw in batch:
                    # Most lines name no tool: parsed only when they might.
                    if '"toolCall' in raw or '"bashExecution"' in raw:
                        yield seq, entry_id, parse_json(raw)

    rows, pending = _rows(session.pk, session.cwd, facts_of(items()))
    del pending  # a result without its call in the session answers nothing
    return rows


def rebuild_session(session_id: int) -> bool:
    """Make the session's rows what its entries give; return whether they differed.

    Holds the session row, as an append does, so no entry lands meanwhile; safe to run again.
    """
    with transaction.atomic():
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        if session is None:
            return False
        wanted = _expected(session)
        stored = list(ToolUse.objects.filter(session_id=session_id).values_list(*_COLUMNS))
        if sorted(map(_key, stored)) == sorted(map(_key, wanted)):
            return False
        ToolUse.objects.filter(session_id=session_id).delete()
        _write(wanted)
        return True


def _key(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple("" if v is None else v for v in row)


def reconcile_session(session_id: int) -> str | None:
    """``manage.py reconcile``'s check of one session: None when right, else what was repaired."""
    return "tool index" if rebuild_session(session_id) else None
