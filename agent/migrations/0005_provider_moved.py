"""A run's provider is now providers.LLMProvider: same table and constraint, state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0004_run_edit_of"),
        ("providers", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="agentrun",
                    name="provider",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="providers.llmprovider",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
