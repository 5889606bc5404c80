"""Each session counts the bytes of its stored lines, so a quota check sums sessions, not entries."""

from typing import Any

from django.db import migrations, models


def count_bytes(apps: Any, schema_editor: Any) -> None:
    length = (
        "octet_length(raw)"
        if schema_editor.connection.vendor == "postgresql"
        else "length(CAST(raw AS BLOB))"
    )
    schema_editor.execute(
        "UPDATE sessions_app_chatsession SET stored_bytes = coalesce((SELECT sum("
        + length
        + ") FROM sessions_app_entry e WHERE e.session_id = sessions_app_chatsession.id), 0)"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0019_action_log_actor_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="stored_bytes",
            field=models.BigIntegerField(default=0, db_default=0),
        ),
        migrations.RunPython(count_bytes, migrations.RunPython.noop),
    ]
