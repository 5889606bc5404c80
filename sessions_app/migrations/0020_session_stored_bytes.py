"""Each session counts the bytes of its stored lines, so a quota check sums sessions, not entries."""

from typing import Any

from django.db import migrations, models

from core.migration_ops import AddFieldIfMissing, update_in_batches


def count_bytes(apps: Any, schema_editor: Any) -> None:
    length = (
        "octet_length(raw)"
        if schema_editor.connection.vendor == "postgresql"
        else "length(CAST(raw AS BLOB))"
    )
    # A few sessions per statement: the column is committed first, and each batch locks only its rows.
    update_in_batches(
        schema_editor,
        "sessions_app_chatsession",
        "stored_bytes = coalesce((SELECT sum("
        + length
        + ") FROM sessions_app_entry e WHERE e.session_id = sessions_app_chatsession.id), 0)",
    )


class Migration(migrations.Migration):
    # Summing every entry's bytes in the transaction that added the column held the session table's
    # exclusive lock for seconds; now the column commits at once and the sums follow in batches.
    atomic = False

    dependencies = [
        ("sessions_app", "0019_action_log_actor_names"),
    ]

    operations = [
        AddFieldIfMissing(
            model_name="chatsession",
            name="stored_bytes",
            field=models.BigIntegerField(default=0, db_default=0),
        ),
        migrations.RunPython(count_bytes, migrations.RunPython.noop),
    ]
