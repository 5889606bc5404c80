"""Each assistant message's cost with its path sums, and each session's totals per day and model."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("sessions_app", "0020_session_stored_bytes"),
        ("compaction_app", "0004_refused_runs"),
    ]

    operations = [
        migrations.CreateModel(
            name="MessageCost",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.IntegerField(help_text="The entry's append sequence")),
                ("segment", models.IntegerField()),
                ("depth", models.IntegerField()),
                ("model", models.CharField(max_length=512)),
                (
                    "day",
                    models.DateField(
                        help_text="UTC day of the entry's timestamp (the day stored, if it has none)"
                    ),
                ),
                ("input", models.BigIntegerField(default=0)),
                ("output", models.BigIntegerField(default=0)),
                ("cache_read", models.BigIntegerField(default=0)),
                ("cache_write", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0)),
                ("source", models.CharField(max_length=10)),
                (
                    "path_cost",
                    models.FloatField(default=0, help_text="Cost of the assistant messages root → this one"),
                ),
                ("path_tokens", models.BigIntegerField(default=0)),
                ("path_messages", models.IntegerField(default=0)),
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
                    models.Index(fields=["session", "segment", "depth"], name="costs_message_path_idx")
                ],
                "constraints": [models.UniqueConstraint(fields=("session", "seq"), name="costs_message_seq")],
            },
        ),
        migrations.CreateModel(
            name="UsageDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "day",
                    models.DateField(
                        help_text="UTC day of the messages' timestamps (the day stored, if they have none)"
                    ),
                ),
                ("model", models.CharField(max_length=512)),
                ("input", models.BigIntegerField(default=0)),
                ("output", models.BigIntegerField(default=0)),
                ("cache_read", models.BigIntegerField(default=0)),
                ("cache_write", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0)),
                ("messages", models.IntegerField(default=0)),
                (
                    "unpriced",
                    models.IntegerField(
                        default=0, help_text="Messages with neither a recorded cost nor a price"
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
                "constraints": [
                    models.UniqueConstraint(fields=("session", "day", "model"), name="costs_usage_day")
                ],
            },
        ),
        # No backfill here: costs/0002_usage_day_copied records the sessions stored before, since the
        # recording writes a column that migration adds.
        migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop),
    ]
