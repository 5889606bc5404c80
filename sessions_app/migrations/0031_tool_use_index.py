"""The index of work: each tool call of a session, written with its entries (``ToolUse``).

A new table, so its indexes are built with it. Sessions stored before it get their rows from
``manage.py reconcile``, which rebuilds any session whose rows differ from its entries.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0030_session_changed_files"),
    ]

    operations = [
        migrations.CreateModel(
            name="ToolUse",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("call_seq", models.IntegerField(help_text="The entry that asked for the call")),
                (
                    "call_id",
                    models.TextField(
                        blank=True, default="", help_text="Pi's toolCallId; empty for a user command"
                    ),
                ),
                ("tool", models.TextField()),
                (
                    "path",
                    models.TextField(
                        blank=True, default="", help_text="As the Files panel shows it; read/edit/write"
                    ),
                ),
                ("absolute", models.TextField(blank=True, default="")),
                ("command", models.TextField(blank=True, default="", help_text="A bash command (its start)")),
                (
                    "result_seq",
                    models.IntegerField(
                        blank=True, help_text="The result's entry; null until stored", null=True
                    ),
                ),
                ("result_entry_id", models.TextField(blank=True, null=True)),
                ("failed", models.BooleanField(default=False, help_text="The result says the tool failed")),
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
                "indexes": [
                    models.Index(fields=["session", "call_id"], name="tool_use_call_idx"),
                    models.Index(fields=["path"], name="tool_use_path_idx", opclasses=["text_pattern_ops"]),
                    models.Index(
                        fields=["absolute"], name="tool_use_absolute_idx", opclasses=["text_pattern_ops"]
                    ),
                    models.Index(fields=["tool", "session"], name="tool_use_tool_idx"),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "call_seq", "call_id"), name="unique_tool_use_call"
                    )
                ],
            },
        ),
    ]
