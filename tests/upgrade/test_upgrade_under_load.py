"""``manage.py migrate`` upgrades a database the team is writing to: no failed write, no deadlock, no
lock that stops the writers for long; ``manage.py reconcile`` then repairs what the old release wrote.

A database of its own is brought to the release before the bookkeeping (stored bytes, context sums,
costs) with sessions in it, then migrated to this release in a child process while threads do what
that release's web processes do against it: append entries one at a time and as sync pushes, as its
entry store did (lock the session row, move its counters, insert the entries), and read session lists
and branches. A monitor polls ``pg_locks`` every 100 ms for the locks that stop those writers on the
session, entry and segment tables. Afterwards each written session's bookkeeping must equal that of a
fresh import of its lines.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.factories import assistant_message, line, user_message
from tests.upgrade.load import (
    LONGEST_LOCK,
    Load,
    Locks,
    own_database,
    run_current,
    step,
    watch_locks,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's locks"),
]

# The release before stored bytes, context sums and costs: the operator upgraded from it.
BEFORE_BOOKKEEPING = ("sessions_app", "0019_action_log_actor_names")
SLOWEST_WRITE = 5.0  # seconds: the pushes stalled 11-13 s; a busy shared machine adds some
SESSIONS, TURNS = 12, 150  # 3,612 entries


@pytest.fixture
def upgrade_database() -> Iterator[str]:
    """A database of its own (the test database stays at this release), dropped afterwards."""
    with own_database("piweb_upgrade") as url:
        yield url


# -- the previous release's writes and reads, as its entry store made them -------------------------------


def _append(db: psycopg.Connection[Any], session_id: int, values: list[dict[str, Any]], push: bool) -> None:
    """Append a chain of entries under the session's leaf, as the previous release's entry store did."""
    with db.transaction():
        next_seq, leaf_seq = db.execute(
            "SELECT next_seq, leaf_seq FROM sessions_app_chatsession WHERE id = %s FOR UPDATE", [session_id]
        ).fetchone()
        depth, segment, compaction, model, thinking = db.execute(
            "SELECT depth, segment, compaction_seq, model_seq, thinking_seq FROM sessions_app_entry "
            "WHERE session_id = %s AND seq = %s",
            [session_id, leaf_seq],
        ).fetchone()
        cursor_value = json.dumps({"bytes": next_seq}) if push else None
        db.execute(
            "UPDATE sessions_app_chatsession SET next_seq = next_seq + %s, entry_count = entry_count + %s, "
            "message_count = message_count + %s, leaf_entry_id = %s, leaf_seq = %s, updated_at = now(), "
            "sync_cursor = coalesce(%s::jsonb, sync_cursor) WHERE id = %s",
            [
                len(values),
                len(values),
                len(values),
                values[-1]["id"],
                next_seq + len(values) - 1,
                cursor_value,
                session_id,
            ],
        )
        rows = []
        for i, value in enumerate(values):
            seq = next_seq + i
            rows.append(
                (
                    session_id,
                    seq,
                    value["id"],
                    value["parentId"],
                    "message",
                    value["message"]["role"],
                    value["timestamp"],
                    line(value),
                    seq - 1,
                    depth + 1 + i,
                    segment,
                    compaction,
                    model,
                    thinking,
                    "",
                )
            )
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO sessions_app_entry (session_id, seq, entry_id, parent_id, type, role, "
                "timestamp, raw, parent_seq, depth, segment, compaction_seq, model_seq, thinking_seq, "
                "search_text) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
        db.execute(
            "UPDATE sessions_app_segment SET tip_seq = %s, tip_depth = %s "
            'WHERE session_id = %s AND "index" = %s',
            [next_seq + len(values) - 1, depth + len(values), session_id, segment],
        )


def _writer(url: str, load: Load, session_id: int, name: str) -> None:
    with psycopg.connect(url) as db:
        n = 0
        while not load.stop.is_set():
            leaf = db.execute(
                "SELECT leaf_entry_id FROM sessions_app_chatsession WHERE id = %s", [session_id]
            ).fetchone()[0]
            db.commit()
            question = user_message(f"{name}-u{n}", leaf, f"question {n} while upgrading")
            answer = assistant_message(
                f"{name}-a{n}", f"{name}-u{n}", f"answer {n}", usage={"input": 40 + n, "output": 7}
            )
            batches = [[question, answer]] if n % 2 else [[question], [answer]]  # odd: a sync push
            for batch in batches:
                push = len(batch) > 1
                load.timed("push" if push else "append", partial(_append, db, session_id, batch, push))
            if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                db.rollback()
            n += 1
            time.sleep(0.02)


def _reader(url: str, load: Load, session_ids: list[int]) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        n = 0
        while not load.stop.is_set():
            pk = session_ids[n % len(session_ids)]

            def read(pk: int = pk) -> None:
                db.execute(
                    "SELECT id, name, entry_count, updated_at FROM sessions_app_chatsession "
                    "WHERE owner_id = (SELECT owner_id FROM sessions_app_chatsession WHERE id = %s) "
                    "ORDER BY updated_at DESC LIMIT 50",
                    [pk],
                ).fetchall()
                db.execute(
                    "SELECT seq, raw FROM sessions_app_entry WHERE session_id = %s "
                    "ORDER BY seq DESC LIMIT 100",
                    [pk],
                ).fetchall()

            load.timed("read", read)
            n += 1
            time.sleep(0.01)


def test_migrate_upgrades_a_database_the_team_is_writing_to(upgrade_database: str) -> None:
    url = upgrade_database
    assert run_current(url, "manage.py", "migrate", "-v0").returncode == 0
    ids = step(url, "seed", str(SESSIONS), str(TURNS))
    # Back to the release before the bookkeeping: its tables and columns go, the entries stay.
    assert step(url, "migrate-to", *BEFORE_BOOKKEEPING) == "ok"

    load, locks = Load(), Locks()
    writers = ids[:4]
    threads = [
        threading.Thread(target=_writer, args=(url, load, pk, f"w{i}")) for i, pk in enumerate(writers)
    ]
    threads += [threading.Thread(target=_reader, args=(url, load, ids)) for _ in range(2)]
    threads.append(threading.Thread(target=watch_locks, args=(url, load, locks, set())))
    for thread in threads:
        thread.start()
    try:
        time.sleep(1)  # the load runs before the upgrade starts, as on a live server
        started = time.monotonic()
        # As docs/operations.md says to run it: a lock not granted within 2 s stops the migration rather
        # than queue every request behind it.
        migrate = run_current(url, "manage.py", "migrate", "-v1", timeout=180, PGOPTIONS="-c lock_timeout=2s")
        ended = time.monotonic()
        time.sleep(1)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=30)

    during = [op for op in load.ops if started <= op[1] <= ended]
    longest, lock, query = locks.longest()
    slowest = max((op for op in during if op[0] != "read"), key=lambda op: op[2], default=None)
    print(
        f"\nmigrate {ended - started:.1f} s; {len(during)} operations during it "
        f"({sum(op[0] != 'read' for op in during)} writes), {len(load.errors)} failed; "
        f"slowest write {slowest[2] if slowest else 0:.2f} s; longest blocking lock {longest:.2f} s "
        f"{lock} {query!r}"
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    assert "deadlock detected" not in migrate.stderr + "".join(load.errors)
    assert load.errors == []
    assert sum(op[0] != "read" for op in during) >= 20, "the writers did not overlap the upgrade"
    assert longest <= LONGEST_LOCK, f"{lock} held {longest:.1f} s by {query!r}"
    assert slowest is None or slowest[2] < SLOWEST_WRITE, f"a {slowest[0]} took {slowest[2]:.1f} s"

    started = time.monotonic()
    reconciled = run_current(url, "manage.py", "reconcile")
    print(
        f"reconcile {time.monotonic() - started:.1f} s (with the process start): {reconciled.stdout.strip()}"
    )
    assert reconciled.returncode == 0, reconciled.stderr[-3000:]
    # The migrations' backfills covered the sessions nobody wrote to; the written ones lacked everything.
    # Changed files and the team activity rollup are counted by reconcile alone, on every session
    # stored before they existed.
    repaired = ", ".join(
        [
            f"activity {len(ids)}",
            f"changed files {len(ids)}",
            *(f"{what} {len(writers)}" for what in ("context sums", "costs", "stored bytes", "usage")),
        ]
    )
    assert (
        reconciled.stdout.strip()
        == f"{len(ids)} session(s) checked up to id {max(ids)}; repaired: {repaired}"
    )
    compared = step(url, "compare", *map(str, writers))
    for pk, (upgraded, fresh) in compared.items():
        assert upgraded == fresh, f"session {pk} after reconcile differs from a fresh import"
