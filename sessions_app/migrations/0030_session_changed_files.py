"""The files Pi's edit and write tools changed in a session, one row per path, and their count on the session.

The count is nullable and starts empty on the sessions stored before: ``manage.py reconcile`` counts
them (sessions_app/services/reconcile.py), a session at a time, outside this migration.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0029_short_token_ids_in_authors"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="files_changed",
            field=models.IntegerField(
                blank=True,
                help_text="Files Pi's edit and write tools changed in this session, on all its branches",
                null=True,
            ),
        ),
        migrations.CreateModel(
            name="ChangedFile",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "session", "digest", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("digest", models.CharField(help_text="SHA-256 of the path, in hex", max_length=64)),
                ("path", models.TextField(help_text="Absolute and normalized, as the files view shows it")),
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
        ),
    ]
