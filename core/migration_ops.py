"""Migration operations that upgrade a live database without stopping its writers.

PostgreSQL takes table locks for schema changes; held for the length of an index build or a table scan,
they queue every append behind them, and two of them in one transaction can deadlock against an append
(which holds its session row, then writes entries). These operations keep each lock short:

- ``AddIndexConcurrently`` builds an index with ``CREATE INDEX CONCURRENTLY`` (writes go on meanwhile);
  the migration holding it must say ``atomic = False``. Elsewhere (SQLite for ``make run``) it is a plain
  ``AddIndex``.
- ``AddForeignKeyNotValid`` adds a foreign-key column, then its constraint ``NOT VALID`` (no scan, a
  moment's lock) and validates the constraint in a statement of its own, which lets writes go on. The
  constraint gets the name and the deferral Django gives it, so the schema is the one ``AddField`` makes.
  Elsewhere it is a plain ``AddField``.
- ``AddFieldIfMissing`` is ``AddField`` for a migration that is not one transaction: run again after it
  was stopped later on, it finds its column there and goes on.
- ``CreateModelIfMissing`` is ``CreateModel`` for such a migration: a table an earlier, stopped run made
  (its keys and indexes, added at the migration's end, may be missing) is made again while still empty.

A migration that is not one transaction is recorded as applied only once all its steps are done, so one
stopped half-way runs again from its first step: these operations find what an earlier run did (a valid
index is kept, one a stopped build left invalid is built again, a column or constraint there is kept),
and ``update_in_batches`` does its batches again. ``tests/upgrade/test_migration_rules.py`` holds every
migration to these rules.
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db import NotSupportedError
from django.db.migrations.operations import AddField, AddIndex, CreateModel

__all__ = [
    "AddFieldIfMissing",
    "AddForeignKeyNotValid",
    "AddIndexConcurrently",
    "CreateModelIfMissing",
    "update_in_batches",
]


class AddIndexConcurrently(PostgresAddIndexConcurrently):
    """``CREATE INDEX CONCURRENTLY`` on PostgreSQL, a plain ``CREATE INDEX`` elsewhere."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)
            return
        valid = _index_valid(schema_editor, self.index.name)
        if valid:
            return  # built by an earlier run of this migration
        if valid is False:
            # A concurrent build that was stopped leaves the index behind, invalid: unused, but kept up.
            schema_editor.execute(
                f"DROP INDEX CONCURRENTLY IF EXISTS {schema_editor.quote_name(self.index.name)}"
            )
        super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


def _index_valid(schema_editor: Any, name: str) -> bool | None:
    """Whether the index ``name`` is valid; None when there is none."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND pg_table_is_visible(c.oid)",
            [name],
        )
        row = cursor.fetchone()
    return None if row is None else bool(row[0])


def _has_column(schema_editor: Any, table: str, column: str) -> bool:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        described = connection.introspection.get_table_description(cursor, table)
    return any(c.name == column for c in described)


class AddFieldIfMissing(AddField):
    """``AddField`` that leaves the column alone when an earlier run of its migration added it."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        column = model._meta.get_field(self.name).column
        if _has_column(schema_editor, model._meta.db_table, column):
            return
        super().database_forwards(app_label, schema_editor, from_state, to_state)


class CreateModelIfMissing(CreateModel):
    """``CreateModel`` that makes again the table an earlier, stopped run of its migration left.

    Django adds a new table's keys and indexes when the migration ends, so a run stopped after the table
    leaves it without them. Nothing writes to it before the migration is recorded (the release that uses
    it is not running yet), so an empty one is dropped and made again; a table holding rows is not this
    migration's to drop, and stops it.
    """

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.name)
        table = model._meta.db_table
        connection = schema_editor.connection
        if table in connection.introspection.table_names():
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {schema_editor.quote_name(table)})")
                if cursor.fetchone()[0]:
                    raise ValueError(f"{table} exists and holds rows: it was not made by this migration")
            schema_editor.delete_model(model)
        super().database_forwards(app_label, schema_editor, from_state, to_state)


class AddForeignKeyNotValid(AddField):
    """Add a nullable foreign key without scanning the table under a lock that stops writes."""

    atomic = False

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        if connection.in_atomic_block:
            raise NotSupportedError(
                f"{type(self).__name__} cannot run inside a transaction "
                "(set atomic = False on the migration)."
            )
        to_model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(connection.alias, to_model):
            return
        field = to_model._meta.get_field(self.name)
        if not field.null:
            raise ValueError(
                f"{self.model_name}.{self.name}: a column added to a live table must be nullable"
            )
        if field.db_index:
            # An index on it would be built under a lock that stops writes; it is added concurrently instead.
            raise ValueError(
                f"{self.model_name}.{self.name}: declare db_index=False and add its index concurrently"
            )
        # The column first, without its constraint: adding a nullable column rewrites nothing.
        table_name = to_model._meta.db_table
        if not _has_column(schema_editor, table_name, field.column):
            field.db_constraint = False
            try:
                schema_editor.add_field(to_model, field)
            finally:
                field.db_constraint = True
        # Django's own name and deferral, so later migrations (and the model state) find the constraint.
        create = schema_editor._create_fk_sql(to_model, field, "_fk_%(to_table)s_%(to_column)s")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_constraint WHERE conrelid = %s::regclass AND conname = %s",
                [table_name, str(create.parts["name"]).strip('"')],
            )
            added = cursor.fetchone() is not None
        if not added:
            schema_editor.execute(f"{create} NOT VALID")
        table = schema_editor.quote_name(table_name)
        # Validation scans the table under a lock that lets reads and writes through.
        schema_editor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {create.parts['name']}")

    def describe(self) -> str:
        return f"Add foreign key {self.name} to {self.model_name} (NOT VALID, then validated)"


def update_in_batches(
    schema_editor: Any, table: str, assignments: str, *, where: str = "", batch: int = 200
) -> int:
    """Run ``UPDATE table SET assignments`` on ``batch`` ids at a time; return how many rows it updated.

    Each batch commits on its own when the migration is not atomic, so the rows it locks are held for one
    batch, never for the whole table; run again, it does the same work, so a failed run is resumed by
    running it again.
    """
    connection = schema_editor.connection
    quoted = connection.ops.quote_name(table)
    extra = f" AND ({where})" if where else ""
    done = 0
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {quoted}")
        low, high = cursor.fetchone()
        if low is None:
            return 0
        for start in range(low, high + 1, batch):
            cursor.execute(
                f"UPDATE {quoted} SET {assignments} WHERE id >= %s AND id < %s{extra}", [start, start + batch]
            )
            done += cursor.rowcount
    return done
