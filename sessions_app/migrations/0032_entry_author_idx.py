"""Who wrote a session's entries, found by index: the session list's ``author`` filter.

Every way entries arrive already stores their author, so the index is the whole of it; built concurrently,
in a migration of its own, so appends go on while it is made.
"""

from django.db import migrations, models

from core.migration_ops import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0031_tool_use_index"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="entry",
            index=models.Index(fields=["session", "author"], name="entry_author_idx"),
        ),
    ]
