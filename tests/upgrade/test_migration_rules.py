"""Every migration upgrades a live database: the rules ``core/migration_ops.py`` serves, read from the code.

A migration runs while the previous release still serves the team (CONTRIBUTING.md, "Add a migration").
Found in the migrations themselves, without running them:

- ``index``: an index or a unique constraint built on an existing table with a lock that stops its writes
  (``AddIndex``, ``AddConstraint``): use ``core.migration_ops.AddIndexConcurrently`` in a migration of its
  own (``atomic = False``);
- ``foreign key``: a foreign key added to an existing table, scanned under a lock that stops writes:
  use ``core.migration_ops.AddForeignKeyNotValid``;
- ``not null``: a column the previous release does not write, added without a database default
  (its inserts would fail), or a column made NOT NULL (a scan under a lock that stops everything);
- ``rewrite``: a column whose type changes (a new field class, a shorter length, other digits), which
  PostgreSQL may rewrite or check under a lock that stops everything: add a column and backfill it;
- ``backfill in transaction``: data rewritten in the transaction of an atomic migration, which holds
  every lock it took until the whole backfill ends: ``atomic = False``, batches that commit alone;
- ``not re-runnable``: a schema step of a migration that is not one transaction which fails when run
  again (the migration is recorded only at its end, so one stopped half-way starts over): use the
  operations of ``core.migration_ops``, or put the step in an atomic migration of its own.

``BASELINE`` lists the migrations made before these rules; a database that applied them is unaffected
by editing them, so the list may only shrink: a new migration breaking a rule fails, and so does an
entry fixed but still listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from django.contrib.postgres.operations import AddIndexConcurrently as PostgresAddIndexConcurrently
from django.db import connection, models
from django.db.migrations import operations as ops
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.migration import Migration
from django.db.models import NOT_PROVIDED

from core.migration_ops import AddFieldIfMissing, AddForeignKeyNotValid, CreateModelIfMissing
from sessions_app.models import Entry

OUR_APPS = {
    "accounts_app",
    "actionlog",
    "agent",
    "audit",
    "compaction_app",
    "costs",
    "discussion",
    "governance",
    "providers",
    "reviews",
    "sessions_app",
    "sync",
    "teams",
}

Finding = tuple[str, str, str, str]  # app, migration, rule, what

BASELINE: set[Finding] = {
    ("actionlog", "0001_initial", "backfill in transaction", "RunPython"),
    ("agent", "0003_run_images", "not null", "agentrun.images"),
    ("audit", "0001_initial", "backfill in transaction", "RunSQL"),
    ("audit", "0004_usage_rollup", "backfill in transaction", "RunPython"),
    ("audit", "0005_usage_without_copies", "backfill in transaction", "RunPython"),
    ("compaction_app", "0002_encrypted_provider_keys", "backfill in transaction", "RunPython"),
    ("compaction_app", "0002_encrypted_provider_keys", "rewrite", "llmprovider.api_key"),
    ("compaction_app", "0003_provider_compat_and_cost", "not null", "llmprovider.compat"),
    ("compaction_app", "0003_provider_compat_and_cost", "not null", "llmprovider.cost_cache_read"),
    ("compaction_app", "0003_provider_compat_and_cost", "not null", "llmprovider.cost_cache_write"),
    ("compaction_app", "0003_provider_compat_and_cost", "not null", "llmprovider.cost_input"),
    ("compaction_app", "0003_provider_compat_and_cost", "not null", "llmprovider.cost_output"),
    ("costs", "0002_usage_day_copied", "index", "usageday.costs_usage_day"),
    ("costs", "0002_usage_day_copied", "not null", "usageday.copied"),
    ("costs", "0002_usage_day_copied", "not re-runnable", "AddConstraint"),
    ("costs", "0002_usage_day_copied", "not re-runnable", "RemoveConstraint"),
    ("discussion", "0003_comment_revisions_and_email_batches", "index", "notification.email_due_idx"),
    ("governance", "0003_comment_findings", "foreign key", "secretfinding.comment"),
    ("governance", "0003_comment_findings", "index", "secretfinding.unique_comment_secret_finding"),
    ("providers", "0001_initial", "backfill in transaction", "RunPython"),
    ("sessions_app", "0003_covering_path_index", "index", "entry.entry_segment_depth_idx"),
    ("sessions_app", "0004_entry_type_index", "index", "entry.entry_type_idx"),
    ("sessions_app", "0008_entry_search", "backfill in transaction", "RunPython"),
    ("sessions_app", "0008_entry_search", "not null", "entry.search_text"),
    ("sessions_app", "0009_hashed_api_tokens", "backfill in transaction", "RunPython"),
    ("sessions_app", "0012_pin_path_links", "backfill in transaction", "RunPython"),
    ("sessions_app", "0013_segment_first_seq", "backfill in transaction", "RunSQL"),
    ("sessions_app", "0014_hashed_share_link_tokens", "backfill in transaction", "RunPython"),
    ("sessions_app", "0014_hashed_share_link_tokens", "not null", "sharelink.token_prefix"),
    ("sessions_app", "0015_session_deleted_at", "index", "chatsession.session_deleted_idx"),
    ("sessions_app", "0015_session_deleted_at", "index", "chatsession.unique_pi_session_per_owner"),
    ("sessions_app", "0016_entry_search_rows", "backfill in transaction", "RunPython"),
    ("sessions_app", "0018_action_log_actors", "foreign key", "actionlog.team"),
    ("sessions_app", "0018_action_log_actors", "index", "actionlog.actionlog_action_idx"),
    ("sessions_app", "0018_action_log_actors", "index", "actionlog.actionlog_actor_idx"),
    ("sessions_app", "0018_action_log_actors", "index", "actionlog.actionlog_session_idx"),
    ("sessions_app", "0018_action_log_actors", "index", "actionlog.actionlog_team_idx"),
    ("sessions_app", "0018_action_log_actors", "index", "actionlog.session_number"),
    ("sessions_app", "0018_action_log_actors", "not null", "actionlog.actor_kind"),
    ("sessions_app", "0018_action_log_actors", "not null", "actionlog.actor_name"),
    ("sessions_app", "0018_action_log_actors", "not null", "actionlog.team_label"),
    ("sessions_app", "0019_action_log_actor_names", "backfill in transaction", "RunPython"),
    ("teams", "0001_initial", "backfill in transaction", "RunPython"),
}


def _database_operations(operations: Sequence[ops.base.Operation]) -> list[ops.base.Operation]:
    """The operations that touch the database (a state-only move touches none)."""
    out: list[ops.base.Operation] = []
    for operation in operations:
        if isinstance(operation, ops.SeparateDatabaseAndState):
            out.extend(_database_operations(operation.database_operations))
        else:
            out.append(operation)
    return out


def _is_noop(operation: ops.base.Operation) -> bool:
    if isinstance(operation, ops.RunPython):
        return operation.code is ops.RunPython.noop
    if isinstance(operation, ops.RunSQL):
        return operation.sql in ("", ops.RunSQL.noop)
    return True


def _altered(app: str, name: str, model: str, operation: ops.AlterField, before: Any) -> set[Finding]:
    """What an ``AlterField`` does to an existing column, from the field as it was before the migration."""
    model_state = before.models.get((app, model)) if before is not None else None
    old = model_state.fields.get(operation.name) if model_state is not None else None
    new = operation.field
    if old is None:
        return set()
    what = f"{model}.{operation.name}"
    found: set[Finding] = set()
    if old.null and not new.null:
        found.add((app, name, "not null", what))
    numbers = ("max_digits", "decimal_places")
    shorter = (getattr(new, "max_length", None) or 0) < (getattr(old, "max_length", None) or 0)
    if (
        type(old) is not type(new)
        or shorter
        or any(getattr(old, a, None) != getattr(new, a, None) for a in numbers)
    ):
        found.add((app, name, "rewrite", what))
    if (new.db_index and not old.db_index) or (new.unique and not old.unique):
        found.add((app, name, "index", what))
    constrained = new.remote_field is not None and getattr(new, "db_constraint", False)
    if constrained and (old.remote_field is None or not getattr(old, "db_constraint", False)):
        found.add((app, name, "foreign key", what))
    return found


# What a migration that is not one transaction may run again after a stop: these find what they did.
RERUNNABLE = (
    AddFieldIfMissing,
    AddForeignKeyNotValid,
    CreateModelIfMissing,
    PostgresAddIndexConcurrently,
    ops.RunPython,
    ops.RunSQL,
)


def findings_of(app: str, migration: Migration, before: Any = None) -> set[Finding]:
    """Return where ``migration`` breaks the rules; ``before`` is the project state it starts from
    (needed for what an ``AlterField`` changes)."""
    found: set[Finding] = set()
    name = migration.name
    if not migration.atomic:
        for operation in _database_operations(migration.operations):
            if not isinstance(operation, RERUNNABLE):
                found.add((app, name, "not re-runnable", type(operation).__name__))
    created: set[str] = set()  # tables made by this migration are empty: any lock on them is free
    for operation in _database_operations(migration.operations):
        if isinstance(operation, ops.CreateModel):
            created.add(operation.name_lower)
            continue
        model = getattr(operation, "model_name_lower", None)
        existing = model is not None and model not in created
        if isinstance(operation, ops.AddIndex) and not isinstance(operation, PostgresAddIndexConcurrently):
            if existing:
                found.add((app, name, "index", f"{model}.{operation.index.name}"))
        elif isinstance(operation, ops.AddConstraint):
            # A unique constraint builds its index under the lock; a check constraint scans under it.
            if existing:
                found.add((app, name, "index", f"{model}.{operation.constraint.name}"))
        elif isinstance(operation, ops.AddField) and existing:
            field = operation.field
            if field.remote_field is not None and getattr(field, "db_constraint", False):
                if not isinstance(operation, AddForeignKeyNotValid):
                    found.add((app, name, "foreign key", f"{model}.{operation.name}"))
            elif not field.null and field.db_default is NOT_PROVIDED and not field.many_to_many:
                found.add((app, name, "not null", f"{model}.{operation.name}"))
            # A foreign key's own index is part of the foreign-key finding.
            if (field.db_index or field.unique) and field.remote_field is None:
                found.add((app, name, "index", f"{model}.{operation.name}"))
        elif isinstance(operation, ops.AlterField) and existing and model is not None:
            found |= _altered(app, name, model, operation, before)
        elif isinstance(operation, ops.RunPython | ops.RunSQL) and not _is_noop(operation):
            # RunSQL runs in the migration's transaction; RunPython may ask for one of its own.
            own = operation.atomic if isinstance(operation, ops.RunPython) else None
            in_transaction = migration.atomic if own is None else own
            if in_transaction:
                found.add((app, name, "backfill in transaction", type(operation).__name__))
    return found


def _all_findings() -> set[Finding]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    found: set[Finding] = set()
    for (app, name), migration in loader.disk_migrations.items():
        if app in OUR_APPS:
            altering = any(
                isinstance(op, ops.AlterField) for op in _database_operations(migration.operations)
            )
            before = loader.project_state((app, name), at_end=False) if altering else None
            found |= findings_of(app, migration, before)
    return found


def test_no_new_migration_stops_the_writers_of_a_live_database() -> None:
    new = _all_findings() - BASELINE
    assert not new, (
        "migrations that would stop or break a live upgrade (see this test's docstring):\n"
        + "\n".join(" ".join(f) for f in sorted(new))
    )


def test_the_baseline_only_shrinks() -> None:
    fixed = BASELINE - _all_findings()
    assert not fixed, "no longer found, remove from BASELINE:\n" + "\n".join(
        " ".join(f) for f in sorted(fixed)
    )


def test_the_rules_catch_what_the_issue_found() -> None:
    """The two migrations of the deadlock and the stall, as they were written first, break the rules."""

    class Stalled(Migration):
        operations = [ops.RunSQL("UPDATE sessions_app_chatsession SET stored_bytes = 1")]

    class Deadlocked(Migration):
        index = models.Index(fields=["session", "segment", "depth"], name="entry_system_idx")
        operations = [ops.AddIndex(model_name="entry", index=index)]

    stalled = Stalled("0020_session_stored_bytes", "sessions_app")
    deadlocked = Deadlocked("0023_entry_context_sums", "sessions_app")
    assert findings_of("sessions_app", stalled) == {
        ("sessions_app", "0020_session_stored_bytes", "backfill in transaction", "RunSQL")
    }
    assert findings_of("sessions_app", deadlocked) == {
        ("sessions_app", "0023_entry_context_sums", "index", "entry.entry_system_idx")
    }


def test_the_rules_catch_columns_changed_in_place() -> None:
    """A type change, a column made NOT NULL and an index added to a column, on the session table."""
    before = MigrationLoader(None, ignore_no_migrations=True).project_state()

    class Altering(Migration):
        operations = [
            ops.AlterField(model_name="chatsession", name="name", field=models.IntegerField(default=0)),
            ops.AlterField(model_name="chatsession", name="leaf_seq", field=models.IntegerField(default=0)),
            ops.AlterField(model_name="chatsession", name="cwd", field=models.TextField(db_index=True)),
        ]

    assert findings_of("sessions_app", Altering("0099_altering", "sessions_app"), before) == {
        ("sessions_app", "0099_altering", "rewrite", "chatsession.name"),
        ("sessions_app", "0099_altering", "not null", "chatsession.leaf_seq"),
        ("sessions_app", "0099_altering", "index", "chatsession.cwd"),
    }


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="constraint validity is PostgreSQL's")
def test_the_safe_operations_leave_the_schema_plain_ones_would() -> None:
    """The author key added NOT VALID was validated, deferred as Django defers it, under Django's name;
    the system-message index built concurrently is valid (a failed concurrent build leaves it invalid)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, convalidated, condeferrable, condeferred FROM pg_constraint "
            "WHERE conrelid = 'sessions_app_entry'::regclass AND contype = 'f' AND conname LIKE %s",
            ["%author_id%"],
        )
        rows = cursor.fetchall()
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = 'entry_system_idx'"
        )
        index = cursor.fetchall()
    assert [(valid, deferrable, deferred) for _, valid, deferrable, deferred in rows] == [(True, True, True)]
    editor: Any
    with connection.schema_editor() as editor:
        django_name = editor._fk_constraint_name(
            Entry, Entry._meta.get_field("author"), "_fk_%(to_table)s_%(to_column)s"
        )
    assert [rows[0][0]] == [str(django_name).strip('"')]
    assert index == [(True,)]
