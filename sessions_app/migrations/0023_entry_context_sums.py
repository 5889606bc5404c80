"""Running sums of the token estimates along each entry's path, and an index for system messages."""

import django.db.models.deletion
from django.db import migrations, models

from core.migration_ops import AddIndexConcurrently, CreateModelIfMissing


class Migration(migrations.Migration):
    # Building the entry index in the transaction that adds EntrySums' key to the session table deadlocked
    # against appends (session row, then entries); each step now commits alone, the index concurrently.
    atomic = False

    dependencies = [
        ("sessions_app", "0022_team_default_share_and_sync_actions"),
    ]

    operations = [
        CreateModelIfMissing(
            name="EntrySums",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "session", "seq", blank=True, editable=False, primary_key=True, serialize=False
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
                ("seq", models.IntegerField()),
                ("tokens", models.BigIntegerField(help_text="Estimates of the path's non-system messages")),
                ("all_tokens", models.BigIntegerField(help_text="Estimates of all the path's messages")),
                ("messages", models.IntegerField(help_text="Messages on the path (compactions count none)")),
                (
                    "usage_seq",
                    models.IntegerField(
                        blank=True, help_text="Newest assistant with trusted usage", null=True
                    ),
                ),
            ],
            options={"verbose_name_plural": "entry sums"},
        ),
        AddIndexConcurrently(
            model_name="entry",
            index=models.Index(
                condition=models.Q(("role", "system")),
                fields=["session", "segment", "depth"],
                name="entry_system_idx",
            ),
        ),
    ]
