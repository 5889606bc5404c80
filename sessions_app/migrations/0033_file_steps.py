"""What each entry did to the files of its branch, kept at write time: the files view sums them.

A new table, and a nullable column on the sessions that says how far a session's steps go. Sessions stored
before (and rows the previous release inserts, which leave it empty) keep the files view's walk down the
branch until ``manage.py reconcile`` writes their steps, a session at a time, outside this migration.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0032_entry_author_idx"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="file_steps_through",
            field=models.IntegerField(
                blank=True,
                default=-1,
                help_text="Entries up to this seq have their file steps kept",
                null=True,
            ),
        ),
        migrations.CreateModel(
            name="FileStep",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "session", "seq", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("seq", models.IntegerField(help_text="The tool result's entry, or the user's command")),
                ("segment", models.IntegerField()),
                ("depth", models.IntegerField()),
                ("entry_id", models.TextField()),
                (
                    "call_seq",
                    models.IntegerField(
                        blank=True, help_text="The assistant entry that asked for it", null=True
                    ),
                ),
                ("call_entry_id", models.TextField(blank=True, null=True)),
                ("kind", models.CharField(max_length=10)),
                (
                    "absolute",
                    models.TextField(blank=True, default="", help_text="The file; empty for a command"),
                ),
                (
                    "file_hash",
                    models.BigIntegerField(default=0, help_text="The first 8 bytes of the path's SHA-256"),
                ),
                ("path", models.TextField(blank=True, default="", help_text="As the files view shows it")),
                ("added", models.IntegerField(default=0)),
                ("removed", models.IntegerField(default=0)),
                (
                    "known",
                    models.BooleanField(default=False, help_text="The file's text is known after this step"),
                ),
                (
                    "resets",
                    models.BooleanField(default=False, help_text="Its text became known or unknown here"),
                ),
                (
                    "prev_seq",
                    models.IntegerField(
                        blank=True, help_text="The file's step above, on this path", null=True
                    ),
                ),
                ("failed", models.BooleanField(default=False)),
                ("by_user", models.BooleanField(default=False)),
                ("command", models.TextField(blank=True, default="")),
                (
                    "commands",
                    models.IntegerField(default=0, help_text="Shell commands on the path up to this step"),
                ),
                (
                    "kinds",
                    models.IntegerField(
                        default=0, help_text="Kinds of touch so far: created 1, written 2, edited 4, read 8"
                    ),
                ),
                ("added_sum", models.IntegerField(default=0)),
                ("removed_sum", models.IntegerField(default=0)),
                ("change_count", models.IntegerField(default=0)),
                ("read_count", models.IntegerField(default=0)),
                (
                    "known_commands",
                    models.IntegerField(
                        default=0,
                        help_text="The path's commands when the file's text was last made known or unknown",
                    ),
                ),
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
                    models.Index(fields=["session", "segment", "depth"], name="file_step_path_idx"),
                    models.Index(fields=["session", "file_hash", "seq"], name="file_step_file_idx"),
                ],
            },
        ),
    ]
