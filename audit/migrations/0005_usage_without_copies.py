"""The usage rollup leaves out the copies a fork or clone starts with: their source counted them."""

from typing import Any

from django.db import migrations


def roll_up_forks_again(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    from audit.usage_rollup import rollup_sql

    forks = "SELECT id FROM sessions_app_chatsession WHERE copied_entries > 0"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM audit_sessionusage WHERE session_id IN ({forks})")
        cursor.execute(
            rollup_sql(
                f"session_id IN ({forks}) AND seq >= (SELECT s.copied_entries FROM sessions_app_chatsession s"
                " WHERE s.id = sessions_app_entry.session_id)"
            )
        )


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0004_usage_rollup"),
        ("sessions_app", "0027_session_copied_entries"),
    ]

    operations = [migrations.RunPython(roll_up_forks_again, migrations.RunPython.noop)]
