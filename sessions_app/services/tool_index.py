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

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from pitree.jsjson import parse_json
from pitree.tool_uses import Facts, ToolResult, shown_path, tool_facts
from sessions_app.models import ChatSession, ToolUse

__all__ = [
    "Said",
    "chain_params",
    "chain_statements",
    "facts_of",
    "rebuild_session",
    "reconcile_session",
    "record",
    "record_entries",
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
        calls, result, command = tool_facts(value)
        if calls or result is not None or command is not None:
            out.append((seq, entry_id, (calls, result, command)))
    return out


def _rows(session_id: int, cwd: str, said: Sequence[Said]) -> tuple[list[tuple[Any, ...]], _Pending]:
    """Pair the batch's calls with its results; return the rows to insert and the results left over."""
    rows: list[list[Any]] = []
    open_calls: dict[str, int] = {}  # call id → its row, until a result answers it
    leftover: list[tuple[int, str | None, ToolResult]] = []
    seen: set[tuple[int, str]] = set()
    # A session names the same few files over and over: each is resolved once (half of an import's time
    # here went to resolving paths).
    paths: dict[str, tuple[str, str]] = {}
    for seq, entry_id, (calls, result, command) in said:
        for call in calls:
            if (seq, call.call_id) in seen:
                continue  # one message naming an id twice: one call, as the unique key has it
            seen.add((seq, call.call_id))
            shown = paths.get(call.path)
            if shown is None:
                shown = paths[call.path] = shown_path(call.path, cwd)
            path, absolute = shown
            # The newest call with an id is the one a result answers (as ``pitree.files`` pairs them).
            open_calls[call.call_id] = len(rows)
            rows.append(
                [session_id, seq, call.call_id, call.tool, path, absolute, call.command, None, None, False]
            )
        if result is not None:
            at = open_calls.pop(result.call_id, None)
            if at is None:
                leftover.append((seq, entry_id, result))
            else:
                rows[at][7:] = [seq, entry_id, result.failed]
        if command is not None:
            rows.append([session_id, seq, "", "bash", "", "", command.command, seq, entry_id, False])
    return [tuple(r) for r in rows], _Pending(leftover)


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
    ToolUse.objects.filter(
        session_id=session_id, call_id=result.call_id, result_seq__isnull=True, call_seq__lt=seq
    ).update(result_seq=seq, result_entry_id=entry_id, failed=result.failed)


def _write(rows: Sequence[tuple[Any, ...]]) -> None:
    if not rows:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and len(rows) > 100:
            # A whole session: COPY, as its entries went in (a new session holds no rows to conflict with).
            with cursor.cursor.copy(f"COPY {_TABLE} ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join(["%s"] * len(_COLUMNS))
        conflict = " ON CONFLICT DO NOTHING"
        cursor.executemany(f"INSERT INTO {_TABLE} ({', '.join(_COLUMNS)}) VALUES ({marks}){conflict}", rows)


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
    "AND t.result_seq IS NULL AND t.call_seq<f.first+b.at"
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
