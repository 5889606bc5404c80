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

``tests/upgrade/test_migration_rules.py`` holds every migration to these rules.
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db import NotSupportedError
from django.db.migrations.operations import AddField, AddIndex

__all__ = ["AddForeignKeyNotValid", "AddIndexConcurrently", "update_in_batches"]


class AddIndexConcurrently(PostgresAddIndexConcurrently):
    """``CREATE INDEX CONCURRENTLY`` on PostgreSQL, a plain ``CREATE INDEX`` elsewhere."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


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
        field.db_constraint = False
        try:
            schema_editor.add_field(to_model, field)
        finally:
            field.db_constraint = True
        # Django's own name and deferral, so later migrations (and the model state) find the constraint.
        create = schema_editor._create_fk_sql(to_model, field, "_fk_%(to_table)s_%(to_column)s")
        schema_editor.execute(f"{create} NOT VALID")
        table = schema_editor.quote_name(to_model._meta.db_table)
        # Validation scans the table under a lock that lets reads and writes through.
        schema_editor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {create.parts['name']}")

    def describe(self) -> str:
        return f"Add foreign key {self.name} to {self.model_name} (NOT VALID, then validated)"


def update_in_batches(
    schema_editor: Any, table: str, assignments: str, *, where: str = "", batch: int = 200
) -> int:
    """Run ``UPDATE table SET assignments`` over ``batch`` rows at a time by primary key; return the rows.

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
