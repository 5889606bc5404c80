"""piweb's database-backed goals: import, open, context, path ids, tree overview and concurrent appends.

Every metric here uses the bench database (see bench/django_env.py) and the owner user "bench", whose
sessions are deleted once at the start of a run. The 100k session is imported once per run (by the import
metric, in a child process) and reused by the others.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import orjson

from bench import generate
from bench.django_env import bench_user, setup_django
from bench.metrics import Context, Result, at_most, metric, ratio_at_most, speedup_at_least
from bench.metrics.inmemory import median_ms

IMPORT_TIMEOUT_S = 300
OPEN_NEWEST = 200  # entries of the branch on the first screen
SCRATCH_TABLE = "bench_copy_scratch"
WRITER_TIMEOUT_S = 120  # for one writer process to report its latencies


# -- shared setup ---------------------------------------------------------------------------------------


def require_db(ctx: Context) -> None:
    """Set Django up once per run and delete the previous run's bench sessions; raise when unavailable."""
    if ctx.db_problem is None:
        ctx.db_problem = setup_django()
    if ctx.db_problem:
        raise RuntimeError(ctx.db_problem)
    if not ctx.state.get("db_cleaned"):
        from sessions_app.models import ChatSession

        ChatSession.objects.filter(owner=bench_user()).delete()
        ctx.state["db_cleaned"] = True


def big_size(ctx: Context) -> str:
    """Return the largest standard size of this run."""
    return ctx.sizes[-1]


class _RenamedLines:
    """A session file's lines with the header id made unique to the spec.

    Generated files share their header id per seed, so without this a second file would be taken as a
    re-import of the first one.
    """

    def __init__(self, path: Path, tag: str) -> None:
        self.path = path
        self.tag = tag

    def __iter__(self) -> Iterator[bytes]:
        with self.path.open("rb") as fh:
            header = orjson.loads(next(fh))
            suffix = hashlib.sha1(self.tag.encode()).hexdigest()[:12]
            header["id"] = f"{str(header['id'])[:-12]}{suffix}"
            yield orjson.dumps(header) + b"\n"
            yield from fh

    def seek(self, offset: int, whence: int = 0) -> int:
        """Start over (the importer reads a file twice, each iteration from the top), or go to the end."""
        if offset != 0 or whence not in (0, 2):
            raise ValueError("only a rewind to the start or a seek to the end is supported")
        self._at = 0 if whence == 0 else self.path.stat().st_size
        return self._at

    def tell(self) -> int:
        """Return where the last seek went: the importer measures the file's size this way."""
        return getattr(self, "_at", 0)


def session_pk(ctx: Context, spec: generate.SessionSpec | str) -> int:
    """Return the primary key of the imported session for spec, importing it in this process if needed."""
    require_db(ctx)
    session = ctx.session(spec)
    key = f"pk:{session.path.name}"
    if key not in ctx.state:
        from sessions_app.services import import_stream

        lines = _RenamedLines(session.path, session.path.name)
        result = import_stream(actor=bench_user(), stream=cast(Any, lines), filename=session.path.name)
        ctx.state[key] = result.session.pk
    return cast(int, ctx.state[key])


def load_session(pk: int) -> Any:
    from sessions_app.models import ChatSession

    return ChatSession.objects.get(pk=pk)


# -- import ---------------------------------------------------------------------------------------------


def run_import_child(
    path: Path, owner: str | None = None, *, timeout: float = IMPORT_TIMEOUT_S
) -> tuple[dict[str, Any], float, float]:
    """Import path in a child process (as ``owner``, else the bench user); return (its JSON result, its
    peak RSS in bytes, wall seconds)."""
    started = time.perf_counter()
    child = [sys.executable, str(Path(__file__).resolve().parent.parent / "import_child.py"), str(path)]
    proc = subprocess.Popen(
        [*child, *([owner] if owner else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # wait4 gives this child's own rusage; RUSAGE_CHILDREN would also count earlier children (Node).
    # Linux carries ru_maxrss across exec, so it also includes this (large) process at fork time; the
    # child therefore reports its own VmHWM too, and that is preferred when present.
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise RuntimeError("import timed out")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        raise RuntimeError(f"import failed: {tail[0]}")
    return orjson.loads(out.strip().splitlines()[-1]), usage.ru_maxrss * 1024.0, time.perf_counter() - started


def _scratch_search(cursor: Any, table: str) -> list[str]:
    """Give the scratch entry table what the entry table has beyond its own indexes: the trigger that
    fills the search rows, into a scratch table LIKE the search table. Return the statements that drop
    them again (none where the entry table has no such trigger, as on a database migrated before it)."""
    from sessions_app.models import EntrySearch

    search = EntrySearch._meta.db_table
    cursor.execute(
        "SELECT t.tgname, pg_get_triggerdef(t.oid), p.proname, pg_get_functiondef(p.oid) FROM pg_trigger t "
        "JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = %s::regclass AND NOT t.tgisinternal",
        [table],
    )
    found = cursor.fetchall()
    if not found:
        return []
    scratch_search = f"{SCRATCH_TABLE}_search"
    cursor.execute(f"DROP TABLE IF EXISTS {scratch_search}")
    cursor.execute(f"CREATE TABLE {scratch_search} (LIKE {search} INCLUDING ALL)")
    drops = [f"DROP TABLE {scratch_search}"]
    for trigger, trigger_sql, function, function_sql in found:
        scratch_function = f"{SCRATCH_TABLE}_{function}"
        cursor.execute(function_sql.replace(function, scratch_function).replace(search, scratch_search))
        cursor.execute(
            trigger_sql.replace(f" ON public.{table} ", f" ON {SCRATCH_TABLE} ")
            .replace(f" ON {table} ", f" ON {SCRATCH_TABLE} ")
            .replace(function, scratch_function)
            .replace(trigger, f"{SCRATCH_TABLE}_{trigger}", 1)
        )
        drops.append(f"DROP FUNCTION {scratch_function}() CASCADE")
    return drops


def copy_baseline_seconds(pk: int) -> tuple[float, int]:
    """Time a COPY FROM STDIN of the session's stored rows into tables shaped like the entry table and
    its search table (same indexes, the same trigger filling the search rows)."""
    from django.db import connection

    from sessions_app.models import Entry
    from sessions_app.services.store import COLUMNS

    table = Entry._meta.db_table
    columns = ", ".join(COLUMNS)
    # Django runs in autocommit here, so each statement (the timed COPY included) commits on its own.
    with tempfile.TemporaryFile() as dump, connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(
            f"COPY (SELECT {columns} FROM {table} WHERE session_id = %s ORDER BY seq) TO STDOUT", [pk]
        ) as copy:
            for block in copy:
                dump.write(block)
        size = dump.tell()
        cursor.execute(f"DROP TABLE IF EXISTS {SCRATCH_TABLE}")
        # Same columns, defaults, constraints and indexes as the entry table; a committed, logged table.
        cursor.execute(f"CREATE TABLE {SCRATCH_TABLE} (LIKE {table} INCLUDING ALL)")
        drops = _scratch_search(cursor, table)
        dump.seek(0)
        t0 = time.perf_counter()
        with raw.copy(f"COPY {SCRATCH_TABLE} ({columns}) FROM STDIN") as copy:
            while block := dump.read(1 << 20):
                copy.write(block)
        seconds = time.perf_counter() - t0
        cursor.execute(f"DROP TABLE {SCRATCH_TABLE}")
        for drop in drops:
            cursor.execute(drop)
    return seconds, size


@metric("db_import")
def db_import(ctx: Context) -> list[Result]:
    """Import the biggest session end to end in a child process, next to a plain COPY of the same rows."""
    require_db(ctx)
    size = big_size(ctx)
    session = ctx.session(size)
    out, rss, wall = run_import_child(session.path)
    ctx.state[f"pk:{session.path.name}"] = int(out["session"])
    copy_s, copy_bytes = copy_baseline_seconds(int(out["session"]))
    # The same file again: every stored line is compared with the file's, nothing is appended.
    again, again_rss, _ = run_import_child(session.path)
    file_mb = int(session.meta["bytes"]) / 1e6
    import_s = float(out["seconds"])
    peak = out.get("peak_rss")
    rss_note = (
        f"VmHWM of the import process (Python + Django included); ru_maxrss via wait4 {rss / 1e6:.0f} MB "
        "counts the bench process at fork time"
        if isinstance(peak, int)
        else "ru_maxrss of the import process via os.wait4 (includes the bench process at fork time)"
    )
    rss = float(peak) if isinstance(peak, int) else rss
    return [
        ratio_at_most(
            f"import {size} JSONL (import_stream)",
            import_s,
            "s",
            baseline=copy_s,
            limit=2,
            against="COPY of the same rows",
            note=(
                f"{out['entries']} entries, {file_mb:.0f} MB; child process wall {wall:.1f} s incl. Django "
                f"start; baseline COPY FROM STDIN of {copy_bytes / 1e6:.0f} MB precomputed rows into a "
                "table LIKE the entry table INCLUDING ALL, with its search-row trigger into a table LIKE the "
                "search table"
            ),
        ),
        ratio_at_most(
            f"import {size} peak RSS",
            rss / 1e6,
            "MB",
            baseline=file_mb,
            limit=2,
            against="file size",
            note=rss_note,
        ),
        ratio_at_most(
            f"import {size} again (nothing new) peak RSS",
            float(again.get("peak_rss") or again_rss) / 1e6,
            "MB",
            baseline=file_mb,
            limit=2,
            against="file size",
            note=f"{again['seconds']:.1f} s; {again['entries']} entries appended; stored lines are read "
            "in batches and compared with the file's as both stream",
        ),
    ]


# -- open -----------------------------------------------------------------------------------------------


def tree_overview_fn() -> tuple[Any, str]:
    """Return the API's tree overview builder, or a segment-table fallback, and which one it is."""
    try:
        from sessions_app.tree_overview import build_tree_overview
    except ImportError:
        from sessions_app.models import Segment

        def segments(session: Any) -> dict[str, Any]:
            rows = Segment.objects.filter(session=session).values_list(
                "index", "parent_index", "start_depth", "tip_depth"
            )
            return {"segments": [list(r) for r in rows]}

        return segments, "segment rows (sessions_app.tree_overview missing)"
    return build_tree_overview, "sessions_app.tree_overview.build_tree_overview"


def open_first_screen(pk: int) -> bytes:
    """Build what opening a session shows first: header, leaf, tree overview, newest entries of the branch.

    The tree comes as the API serves it: JSON cached per session state (built on the first open).
    """
    from sessions_app import queries
    from sessions_app.overview_cache import overview_json

    session = load_session(pk)
    leaf = queries.find_entry(session, session.leaf_entry_id)
    rows = queries.path_rows(session, leaf, min_depth=max(0, (leaf.depth or 0) - OPEN_NEWEST + 1))
    return orjson.dumps(
        {
            "header": session.header_raw,
            "leaf": leaf.raw,
            "tree": orjson.Fragment(overview_json(session)),
            "entries": [row.raw for row in rows],
        }
    )


@metric("db_open")
def db_open(ctx: Context) -> list[Result]:
    """Time opening the small and the biggest session (first screen) against Pi's open + context."""
    require_db(ctx)
    size = big_size(ctx)
    small_pk, big_pk = session_pk(ctx, "1k"), session_pk(ctx, size)
    small = median_ms(lambda: open_first_screen(small_pk), repeat=20)
    big = median_ms(lambda: open_first_screen(big_pk), repeat=10)
    payload = len(open_first_screen(big_pk))
    return [
        Result(metric="open session 1k (first screen)", value=small, unit="ms", goal="reference"),
        speedup_at_least(
            f"open session {size} (first screen)",
            big,
            "ms",
            baseline=ctx.baselines.get(f"pi.open_context.{size}"),
            limit=50,
            against=f"Pi open+context {size}",
            note=(
                f"session row, find_entry(leaf), tree JSON cached per (session, next seq, leaf) as the API "
                f"serves it (first open builds it: see the tree overview rows), newest {OPEN_NEWEST}; "
                f"{payload / 1e3:.0f} KB"
            ),
        ),
        ratio_at_most(
            f"open session {size} vs 1k",
            big,
            "ms",
            baseline=small,
            limit=1.5,
            against="piweb open 1k",
        ),
    ]


# -- context --------------------------------------------------------------------------------------------


def context_ms(pk: int, repeat: int) -> tuple[float, int]:
    """Return the median time of context_for_leaf on the session's leaf and its message count."""
    from sessions_app.queries import context_for_leaf

    session = load_session(pk)
    value = median_ms(lambda: context_for_leaf(session), repeat=repeat)
    return value, len(context_for_leaf(session).projection.messages)


@metric("db_context")
def db_context(ctx: Context) -> list[Result]:
    """Time context_for_leaf against Pi's buildSessionContext, and a long vs a short equal-context history."""
    require_db(ctx)
    size = big_size(ctx)
    rows: list[Result] = []
    value, messages = context_ms(session_pk(ctx, size), repeat=10)
    pi_messages = ctx.baselines.get(f"pi.messages.{size}")
    rows.append(
        ratio_at_most(
            f"context projection {size} (DB)",
            value,
            "ms",
            baseline=ctx.baselines.get(f"pi.context.{size}"),
            limit=1.5,
            against=f"Pi context {size}",
            note=f"{messages} messages" + ("" if pi_messages is None else f" (Pi {int(pi_messages)})"),
        )
    )
    short, long = generate.equal_context_specs()
    if ctx.quick:
        return rows
    short_ms, short_messages = context_ms(session_pk(ctx, short), repeat=20)
    long_ms, long_messages = context_ms(session_pk(ctx, long), repeat=20)
    rows.append(
        ratio_at_most(
            "context projection, equal context, 100k vs 1k history",
            long_ms,
            "ms",
            baseline=short_ms,
            limit=1.5,
            against="1k history",
            note=f"{long_messages} vs {short_messages} messages; Pi: "
            f"{ctx.baselines.get('pi.context.equal.100k', float('nan')):.1f} vs "
            f"{ctx.baselines.get('pi.context.equal.1k', float('nan')):.1f} ms",
        )
    )
    return rows


# -- path ids -------------------------------------------------------------------------------------------


@metric("db_path_seqs")
def db_path_seqs(ctx: Context) -> list[Result]:
    """Time queries.path_seqs at depth 10k and at the leaf of the biggest session."""
    require_db(ctx)
    from sessions_app import queries

    size = big_size(ctx)
    session_file = ctx.session(size)
    session = load_session(session_pk(ctx, size))
    # (label, entry id, absolute limit in ms)
    targets = [("10k", str(session_file.meta["probe_ids_by_depth"]["10000"]), 10.0)] if size == "100k" else []
    targets.append(("100k" if size == "100k" else "10k", str(session_file.meta["leaf_id"]), 60.0))
    rows: list[Result] = []
    for label, entry_id, limit in targets:
        leaf = queries.find_entry(session, entry_id)
        found = len(queries.path_seqs(session, leaf))
        if found != (leaf.depth or 0) + 1:
            raise RuntimeError(f"path_seqs returned {found} ids for depth {leaf.depth}")
        value = median_ms(lambda s=session, r=leaf: queries.path_seqs(s, r), repeat=10)
        note = f"depth {leaf.depth}; {len(queries.path_ranges(session, leaf))} segments on the path"
        rows.append(at_most(f"path ids (DB), depth {label}", value, "ms", limit, note=note))
        rows.append(
            ratio_at_most(
                f"path ids (DB) vs dict walk, depth {label}",
                value,
                "ms",
                baseline=ctx.baselines.get(f"dict_walk.{label}"),
                limit=25,
                against="dict walk",
            )
        )
    return rows


# -- tree overview --------------------------------------------------------------------------------------


@metric("db_tree_overview")
def db_tree_overview(ctx: Context) -> list[Result]:
    """Measure the tree overview payload and build time for the biggest session."""
    require_db(ctx)
    size = big_size(ctx)
    session = load_session(session_pk(ctx, size))
    overview, which = tree_overview_fn()
    value = median_ms(lambda: orjson.dumps(overview(session)), repeat=10)
    built = overview(session)
    payload = len(orjson.dumps(built))
    items = len(built.get("items", [])) if isinstance(built, dict) else 0
    note = f"via {which}; {items} items, {built.get('segmentCount', '?')} segments"
    from sessions_app.overview_cache import overview_json

    overview_json(session)
    cached = median_ms(lambda: overview_json(session), repeat=20)
    return [
        at_most(f"tree overview payload {size}", payload / 1e3, "KB", 200, note=note),
        at_most(
            f"tree overview time {size}",
            cached,
            "ms",
            10,
            note=f"as served: JSON cached per session state; the first open after a change builds it in "
            f"{value:.1f} ms (build + JSON encoding)",
        ),
    ]


# -- appends ---------------------------------------------------------------------------------------------

APPEND_ROUNDS = 4  # piweb and the bare baseline take turns, so both see the same machine load

# The baseline: what claiming a seq and storing one row costs on this PostgreSQL without piweb, by
# psycopg directly: the session row's UPDATE … RETURNING (its lock, the seq, the old leaf), then one
# INSERT of the same entry row, then COMMIT, each a round trip as a plain client sends them.
_BARE_CLAIM = """
UPDATE sessions_app_chatsession AS s SET next_seq = s.next_seq + 1, entry_count = s.entry_count + 1,
    message_count = s.message_count + 1, leaf_entry_id = %(id)s, leaf_seq = s.next_seq, updated_at = now()
FROM (SELECT id, leaf_entry_id, leaf_seq FROM sessions_app_chatsession WHERE id = %(pk)s FOR UPDATE) AS old
WHERE s.id = old.id
RETURNING s.next_seq - 1, old.leaf_entry_id, old.leaf_seq
"""
_BARE_INSERT = """
INSERT INTO sessions_app_entry (session_id, seq, entry_id, parent_id, type, role, timestamp, raw, parent_seq,
    depth, segment, compaction_seq, model_seq, thinking_seq, search_text)
VALUES (%(pk)s, %(seq)s, %(id)s, %(parent)s, 'message', 'user', %(stamp)s, %(raw)s, %(parent_seq)s,
    %(seq)s, 0, NULL, NULL, NULL, %(text)s)
"""


def _bench_entry(i: int) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": f"bench append {os.getpid()} {i}"}],
            "timestamp": int(time.time() * 1000),
        },
    }


def _append_worker(pk: int, count: int, start: Any, out: Any) -> None:
    """Append count user messages one by one through piweb and report each call's latency in ms."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()  # never reuse the parent's Redis connections after fork
    from sessions_app.services import append_entries

    session = load_session(pk)
    samples: list[float] = []
    start.wait()
    for i in range(count):
        entry = _bench_entry(i)
        t0 = time.perf_counter()
        append_entries(session=session, actor=session.owner, entries=[entry])
        samples.append((time.perf_counter() - t0) * 1000)
    out.put(samples)


def _bare_worker(pk: int, count: int, start: Any, out: Any) -> None:
    """Append count rows of the same shape with psycopg alone and report each one's latency in ms."""
    import psycopg

    from pitree.jsjson import js_stringify
    from pitree.jsonl import generate_entry_id
    from pitree.searchable import search_text
    from pitree.timestamps import now_iso

    samples: list[float] = []
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        start.wait()
        for i in range(count):
            entry_id = generate_entry_id(())
            stamp = now_iso()
            t0 = time.perf_counter()
            with conn.cursor() as cursor:
                cursor.execute(_BARE_CLAIM, {"pk": pk, "id": entry_id})
                seq, parent, parent_seq = cast(tuple[int, str | None, int | None], cursor.fetchone())
                entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp}
                entry |= {k: v for k, v in _bench_entry(i).items() if k != "type"}
                cursor.execute(
                    _BARE_INSERT,
                    {
                        "pk": pk,
                        "seq": seq,
                        "id": entry_id,
                        "parent": parent,
                        "stamp": stamp,
                        "raw": js_stringify(entry),
                        "parent_seq": parent_seq,
                        "text": search_text(entry),
                    },
                )
            conn.commit()
            samples.append((time.perf_counter() - t0) * 1000)
    out.put(samples)


def close_before_fork() -> None:
    """Close this process's database connections and connection pools, so no socket is inherited.

    With a pool, closing a connection only hands it back: its socket stays open in the pool, and forked
    children drawing from their copy of the pool would share it (and each other's results).
    """
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()
        if conn.vendor == "postgresql":
            conn.close_pool()  # type: ignore[attr-defined]


def run_writers(pk: int, writers: int, per_writer: int, *, bare: bool = False) -> list[float]:
    """Run writers processes, each with its own connection, appending to one session; return latencies."""
    close_before_fork()
    fork = multiprocessing.get_context("fork")
    start, out = fork.Event(), fork.Queue()
    target = _bare_worker if bare else _append_worker
    procs = [fork.Process(target=target, args=(pk, per_writer, start, out)) for _ in range(writers)]
    for proc in procs:
        proc.start()
    start.set()
    samples: list[float] = []
    try:
        for _ in procs:
            samples.extend(_next_report(out, procs, deadline=time.monotonic() + WRITER_TIMEOUT_S))
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return samples


def _next_report(out: Any, procs: list[Any], *, deadline: float) -> list[float]:
    """Return the next writer's latencies; raise as soon as a writer has died without reporting."""
    while True:
        try:
            return cast(list[float], out.get(timeout=0.2))
        except queue.Empty:
            failed = [proc.exitcode for proc in procs if proc.exitcode not in (None, 0)]
            if failed:
                raise RuntimeError(
                    f"{len(failed)} of {len(procs)} writer processes failed (exit code {failed[0]}); "
                    "their tracebacks are above"
                ) from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"a writer process reported nothing within {WRITER_TIMEOUT_S} s") from None


def bare_session_pk() -> int:
    """Return a new empty session of the bench user for the baseline's rows."""
    from sessions_app.services import create_session

    return cast(int, create_session(actor=bench_user(), cwd="/bench/bare-append").pk)


def check_integrity(pk: int) -> tuple[int, int, int]:
    """Return (gaps in seq, duplicated entry ids, rows) for a session."""
    from django.db import connection

    from sessions_app.models import Entry

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), coalesce(max(seq), -1), count(entry_id), count(DISTINCT entry_id) "
            f"FROM {Entry._meta.db_table} WHERE session_id = %s",
            [pk],
        )
        rows, top, with_id, distinct = cursor.fetchone()
    next_seq = load_session(pk).next_seq
    gaps = (top + 1 - rows) + abs(next_seq - rows)
    return gaps, with_id - distinct, rows


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


@metric("db_append")
def db_append(ctx: Context) -> list[Result]:
    """Append with 1 and with 8 concurrent writers on one session, next to a bare UPDATE + INSERT.

    Checks that seq stays gapless and ids unique. The machine is shared, so each row also carries the
    bare baseline measured in alternating rounds with it: the floor this PostgreSQL allows at that moment.
    """
    require_db(ctx)
    pk = session_pk(ctx, big_size(ctx))
    bare_pk = bare_session_pk()
    before = load_session(pk).entry_count
    per = 50 if ctx.quick else 200
    rounds = 2 if ctx.quick else APPEND_ROUNDS
    rows: list[Result] = []
    total = 0
    for writers, limit in ((1, 20.0), (8, 50.0)):
        count = per if writers == 1 else max(per // 4, 10)
        samples: list[float] = []
        bare: list[float] = []
        for turn in range(rounds):
            chunk = -(-count // rounds)
            for is_bare in (turn % 2 == 1, turn % 2 == 0):  # take turns going first
                (bare if is_bare else samples).extend(
                    run_writers(bare_pk if is_bare else pk, writers, chunk, bare=is_bare)
                )
        total += len(samples)
        value, floor = p99(samples), p99(bare)
        rows.append(
            replace(
                at_most(
                    f"append p99, {writers} writer{'s' if writers > 1 else ''}",
                    value,
                    "ms",
                    limit,
                    note=(
                        f"{len(samples)} appends of one entry, p50 {statistics.median(samples):.1f} ms, "
                        f"max {max(samples):.1f} ms; separate processes and connections; baseline: psycopg "
                        f"UPDATE … RETURNING + INSERT of the same row + COMMIT, p50 "
                        f"{statistics.median(bare):.1f} ms, in alternating rounds"
                    ),
                ),
                baseline=floor,
                ratio=value / floor if floor else None,
            )
        )
    gaps, duplicates, stored = check_integrity(pk)
    bare_gaps, bare_duplicates, _ = check_integrity(bare_pk)
    lost = before + total - stored
    rows.append(
        at_most(
            "append gaps + duplicate ids",
            float(gaps + duplicates + abs(lost)),
            "",
            0,
            note=f"{gaps} seq gaps, {duplicates} duplicate ids, {lost} appends missing; {stored} rows "
            f"(baseline session: {bare_gaps} gaps, {bare_duplicates} duplicate ids)",
        )
    )
    return rows
