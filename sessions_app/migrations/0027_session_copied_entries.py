"""A fork or clone records how many of its first entries are copies, so usage totals count them once."""

from typing import Any

from django.db import migrations, models

from core.migration_ops import AddFieldIfMissing, update_in_batches


def count_copies(apps: Any, schema_editor: Any) -> None:
    """Mark the copies of the forks and clones made before: they were stored first, keeping their ids,
    so they end at the last entry whose id the source session holds too. A fork whose source is gone
    (``forked_from`` cleared) keeps counting all its entries, as before."""
    update_in_batches(
        schema_editor,
        "sessions_app_chatsession",
        """copied_entries = coalesce((
            SELECT max(e.seq) + 1 FROM sessions_app_entry e
             WHERE e.session_id = sessions_app_chatsession.id AND e.entry_id IS NOT NULL
               AND EXISTS (SELECT 1 FROM sessions_app_entry s
                            WHERE s.session_id = sessions_app_chatsession.forked_from_id
                              AND s.entry_id = e.entry_id)
        ), 0)""",
        where="forked_from_id IS NOT NULL",
    )


class Migration(migrations.Migration):
    # The column commits at once; the copies are counted a batch of sessions at a time after it.
    atomic = False

    dependencies = [
        ("sessions_app", "0026_action_log_choices"),
    ]

    operations = [
        AddFieldIfMissing(
            model_name="chatsession",
            name="copied_entries",
            field=models.IntegerField(
                db_default=0,
                default=0,
                help_text="Entries before this sequence were copied from the session it was forked or cloned from",
            ),
        ),
        migrations.RunPython(count_copies, migrations.RunPython.noop),
    ]
