"""Message text for search: a column on every entry and, on PostgreSQL, a text-search vector under GIN."""

from typing import Any

from django.db import migrations, models

VECTOR_SQL = (
    "ALTER TABLE sessions_app_entry ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED"
)
INDEX_SQL = "CREATE INDEX entry_search_idx ON sessions_app_entry USING gin (search_vector)"


def fill_search_text(apps: Any, schema_editor: Any) -> None:
    """Fill the search text of entries stored before this migration, in batches."""
    from pitree.jsjson import parse_json
    from pitree.searchable import search_text

    Entry = apps.get_model("sessions_app", "Entry")
    types = ("message", "custom_message", "compaction", "branch_summary")
    rows = Entry.objects.filter(type__in=types).values_list("pk", "raw").order_by("pk")
    batch: list[Any] = []
    for pk, raw in rows.iterator(chunk_size=2000):
        text = search_text(parse_json(raw))
        if text:
            batch.append(Entry(pk=pk, search_text=text))
        if len(batch) >= 2000:
            Entry.objects.bulk_update(batch, ["search_text"])
            batch = []
    if batch:
        Entry.objects.bulk_update(batch, ["search_text"])


def add_vector(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(VECTOR_SQL)
        schema_editor.execute(INDEX_SQL)


def drop_vector(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE sessions_app_entry DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_sync_cursor"),
    ]

    operations = [
        migrations.AddField(
            model_name="entry",
            name="search_text",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(fill_search_text, migrations.RunPython.noop),
        migrations.RunPython(add_vector, drop_vector),
    ]
