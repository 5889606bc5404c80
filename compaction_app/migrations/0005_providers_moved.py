"""The provider model moved to the providers app: its table stays, only the model state moves."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0005_provider_moved"),
        ("compaction_app", "0004_refused_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="llmprovider",
                    name="one_default_summarizer",
                ),
                migrations.DeleteModel(
                    name="LLMProvider",
                ),
            ],
            database_operations=[],
        ),
    ]
