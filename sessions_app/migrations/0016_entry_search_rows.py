"""Search reads narrow rows: each searchable entry's position and text-search vector in their own table.

The vector leaves the entry table (it was a generated column there, under a GIN index of its own): entry
rows hold the verbatim line, so they are wide and their vectors were often stored out of line, which made
counting or listing a session's hits read most of the session. A trigger fills the new table on every
insert into the entry table, whatever the write path. The GIN index starts with the session
(btree_gin, a trusted extension) so a search in one session reads only that session's postings; where the
extension cannot be created the index holds the vector alone and the queries stay correct, only slower.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models, transaction

ENTRY = "sessions_app_entry"
TABLE = "sessions_app_entrysearch"
# New entries wait in the index's pending list until it is merged, and every probe of a session scans the
# whole list: 256 kB rather than the default 4 MB, so a busy server's appends never add milliseconds to
# each session a search probes. Imports pay for it with more, smaller merges.
INDEX_OPTIONS = "WITH (gin_pending_list_limit = 256)"
# A row trigger, before the entry is written: a statement trigger's table of new rows would hold every
# verbatim line of an import again (a million-entry file spilled to temporary files).
FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION sessions_app_entry_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {TABLE} (session_id, seq, segment, depth, vector)
    VALUES (NEW.session_id, NEW.seq, NEW.segment, NEW.depth, to_tsvector('simple'::regconfig, NEW.search_text));
    RETURN NEW;
END
$$
"""
TRIGGER_SQL = (
    f"CREATE TRIGGER entry_search_fill BEFORE INSERT ON {ENTRY} FOR EACH ROW "
    "WHEN (NEW.search_text <> '') EXECUTE FUNCTION sessions_app_entry_search_fill()"
)


def forward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    run = schema_editor.execute
    run(f"ALTER TABLE {TABLE} ADD COLUMN vector tsvector NOT NULL")
    run(
        f"INSERT INTO {TABLE} (session_id, seq, segment, depth, vector) "
        f"SELECT session_id, seq, segment, depth, to_tsvector('simple'::regconfig, search_text) "
        f"FROM {ENTRY} WHERE search_text <> ''"
    )
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            run("CREATE EXTENSION IF NOT EXISTS btree_gin")
        columns = "session_id, vector"
    except Exception:  # no privilege or no contrib package: a plain vector index still answers
        columns = "vector"
    run(f"CREATE INDEX entry_search_session_idx ON {TABLE} USING gin ({columns}) {INDEX_OPTIONS}")
    run(FUNCTION_SQL)
    run(TRIGGER_SQL)
    run("DROP INDEX IF EXISTS entry_search_idx")
    run(f"ALTER TABLE {ENTRY} DROP COLUMN IF EXISTS search_vector")
    run(f"ANALYZE {TABLE}")


def backward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    run = schema_editor.execute
    run(f"DROP TRIGGER IF EXISTS entry_search_fill ON {ENTRY}")
    run("DROP FUNCTION IF EXISTS sessions_app_entry_search_fill()")
    run(
        f"ALTER TABLE {ENTRY} ADD COLUMN search_vector tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED"
    )
    run(f"CREATE INDEX entry_search_idx ON {ENTRY} USING gin (search_vector)")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_session_deleted_at"),
    ]

    operations = [
        migrations.CreateModel(
            name="EntrySearch",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "session", "seq", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("seq", models.IntegerField()),
                ("segment", models.IntegerField(blank=True, null=True)),
                ("depth", models.IntegerField(blank=True, null=True)),
                (
                    "session",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.chatsession",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "entry search rows",
            },
        ),
        migrations.RunPython(forward, backward),
    ]
