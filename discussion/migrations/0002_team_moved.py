"""A discussion's team is now teams.Team: same table and constraint, state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("discussion", "0001_initial"),
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="teamdiscussion",
                    name="team",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="discussion",
                        to="teams.team",
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
