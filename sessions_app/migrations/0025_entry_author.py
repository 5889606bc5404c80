"""Who wrote each entry: an author table, and a nullable reference to it on every entry."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from core.migration_ops import AddForeignKeyNotValid, CreateModelIfMissing


class Migration(migrations.Migration):
    # The foreign key on the entry table is added NOT VALID and validated apart, each step committed.
    atomic = False

    dependencies = [
        ("sessions_app", "0024_entry_context_sums_backfill"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        CreateModelIfMissing(
            name="EntryAuthor",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "key",
                    models.CharField(help_text="Digest of the author's fields", max_length=64, unique=True),
                ),
                ("kind", models.CharField(max_length=10)),
                ("name", models.TextField(blank=True, default="")),
                ("via", models.TextField(blank=True, default="")),
                ("imported", models.BooleanField(default=False)),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        AddForeignKeyNotValid(
            model_name="entry",
            name="author",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="sessions_app.entryauthor",
            ),
        ),
    ]
