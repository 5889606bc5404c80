"""An upgrade stopped half-way (a lost connection, Ctrl-C, a lock timeout) is finished by running
``migrate`` again.

A migration that is not one transaction is recorded only once all its steps are done, so the next run
starts it from its first step again: the steps an earlier run committed must be found and kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor

from core.migration_ops import AddForeignKeyNotValid, AddIndexConcurrently, CreateModelIfMissing
from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import conversation, session_file

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's index and constraint states"),
]

BEFORE_STORED_BYTES = [("sessions_app", "0019_action_log_actor_names")]


def _migrate(targets: list[tuple[str, str]] | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


@pytest.fixture
def newest_state_after() -> Iterator[None]:
    """Whatever the test leaves, the database is at the newest state afterwards."""
    yield
    _migrate()


def _one(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        row = cursor.fetchone()
    return None if row is None else row[0]


def test_a_backfill_stopped_after_its_column_is_finished_by_migrating_again(
    user: Any, newest_state_after: None
) -> None:
    owner = user("olga")
    session = services.import_jsonl(actor=owner, data=session_file(conversation(5))).session
    _migrate(BEFORE_STORED_BYTES)
    # 0020 as a stopped run leaves it: its column committed, its backfill not done, itself not recorded.
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE sessions_app_chatsession ADD COLUMN stored_bytes bigint DEFAULT 0 NOT NULL"
        )

    _migrate()

    stored = ChatSession.objects.get(pk=session.pk).stored_bytes
    assert stored > 0
    assert stored == _one(
        "SELECT sum(octet_length(raw)) FROM sessions_app_entry WHERE session_id = %s", [session.pk]
    )


def test_an_index_a_stopped_concurrent_build_left_invalid_is_built_again(newest_state_after: None) -> None:
    executor = MigrationExecutor(connection)
    before = executor.loader.project_state()
    operation = AddIndexConcurrently(
        model_name="entry", index=models.Index(fields=["session", "timestamp"], name="entry_rerun_idx")
    )
    after = before.clone()
    operation.state_forwards("sessions_app", after)
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX entry_rerun_idx ON sessions_app_entry (session_id)")
        # What a cancelled CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'entry_rerun_idx'::regclass"
        )
    try:
        for _ in range(2):  # the second run finds it valid and keeps it
            with connection.schema_editor(atomic=False) as editor:
                operation.database_forwards("sessions_app", editor, before, after)
            assert _one("SELECT indisvalid FROM pg_index WHERE indexrelid = 'entry_rerun_idx'::regclass")
            assert "timestamp" in _one("SELECT pg_get_indexdef('entry_rerun_idx'::regclass)")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS entry_rerun_idx")


def test_a_foreign_key_whose_constraint_was_not_added_yet_gets_it(newest_state_after: None) -> None:
    executor = MigrationExecutor(connection)
    before = executor.loader.project_state(("sessions_app", "0024_entry_context_sums_backfill"))
    after = executor.loader.project_state(("sessions_app", "0025_entry_author"))
    [operation] = [
        op
        for op in executor.loader.get_migration("sessions_app", "0025_entry_author").operations
        if isinstance(op, AddForeignKeyNotValid)
    ]
    query = (
        "SELECT conname, convalidated, condeferred FROM pg_constraint "
        "WHERE conrelid = 'sessions_app_entry'::regclass AND contype = 'f' AND conname LIKE '%%author_id%%'"
    )
    with connection.cursor() as cursor:
        cursor.execute(query)
        [made] = cursor.fetchall()
        # A run stopped between the column and its constraint.
        cursor.execute(f'ALTER TABLE sessions_app_entry DROP CONSTRAINT "{made[0]}"')

    for _ in range(2):  # the second run finds both and validates again
        with connection.schema_editor(atomic=False) as editor:
            operation.database_forwards("sessions_app", editor, before, after)
        with connection.cursor() as cursor:
            cursor.execute(query)
            assert cursor.fetchall() == [made]


def _sums_keys() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'sessions_app_entrysums'::regclass "
            "AND contype = 'f' ORDER BY conname"
        )
        return [name for (name,) in cursor.fetchall()]


def test_a_table_a_stopped_run_made_without_its_keys_is_made_again(
    user: Any, newest_state_after: None
) -> None:
    executor = MigrationExecutor(connection)
    # The newest state, so the table is made again as every later migration left it.
    state = executor.loader.project_state()
    [operation] = [
        op
        for op in executor.loader.get_migration("sessions_app", "0023_entry_context_sums").operations
        if isinstance(op, CreateModelIfMissing)
    ]
    keys = _sums_keys()
    assert keys  # the key to the session table, which Django adds at the migration's end
    # A run stopped before the migration's end: the table is there, its key is not.
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE sessions_app_entrysums DROP CONSTRAINT "{keys[0]}"')

    with connection.schema_editor(atomic=False) as editor:
        operation.database_forwards("sessions_app", editor, state, state)

    assert _sums_keys() == keys
    # A table holding rows was not made by a stopped run of this migration: it is left alone.
    services.import_jsonl(actor=user("olga"), data=session_file(conversation(1)))
    with pytest.raises(ValueError, match="holds rows"), connection.schema_editor(atomic=False) as editor:
        operation.database_forwards("sessions_app", editor, state, state)
    assert _sums_keys() == keys
