"""Providers take over the table they had in compaction_app (no data moved)."""

from django.db import migrations, models

import core.secret_box
import providers.models

MODELS = ["llmprovider"]


def _relabel(apps, source, target):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        # Where both exist (post_migrate already ran for the other side), the other side's row stays.
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def claim_content_types(apps, schema_editor):
    """Keep permissions and admin history: the content types follow the models to their new app."""
    _relabel(apps, "compaction_app", "providers")


def return_content_types(apps, schema_editor):
    _relabel(apps, "providers", "compaction_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("compaction_app", "0004_refused_runs"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="LLMProvider",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=100, unique=True)),
                        (
                            "api",
                            models.CharField(
                                choices=[
                                    ("openai-completions", "OpenAI-compatible chat completions"),
                                    ("anthropic-messages", "Anthropic messages"),
                                ],
                                default="openai-completions",
                                max_length=32,
                            ),
                        ),
                        (
                            "base_url",
                            models.CharField(
                                help_text="OpenAI-compatible URLs include /v1; Anthropic's do not",
                                max_length=500,
                            ),
                        ),
                        ("model_id", models.CharField(max_length=200)),
                        (
                            "provider",
                            models.CharField(
                                help_text="Provider label recorded in summaries, e.g. openai", max_length=100
                            ),
                        ),
                        ("context_window", models.PositiveIntegerField(default=128000)),
                        ("max_output_tokens", models.PositiveIntegerField(default=4096)),
                        (
                            "api_key",
                            core.secret_box.EncryptedTextField(
                                blank=True, default="", help_text="Encrypted at rest (PIWEB_SECRETS_KEY)"
                            ),
                        ),
                        ("is_summarizer_default", models.BooleanField(default=False)),
                        ("reasoning", models.BooleanField(default=False)),
                        (
                            "compat",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text='OpenAI-compatible servers only: Pi\'s compat settings, e.g. {"maxTokensField": "max_tokens"}. Settings left out are detected from the provider and the base URL, as Pi detects them.',
                                validators=[providers.models._validate_compat],
                            ),
                        ),
                        (
                            "cost_input",
                            models.FloatField(default=0, help_text="Dollars per million input tokens"),
                        ),
                        (
                            "cost_output",
                            models.FloatField(default=0, help_text="Dollars per million output tokens"),
                        ),
                        (
                            "cost_cache_read",
                            models.FloatField(default=0, help_text="Dollars per million cache-read tokens"),
                        ),
                        (
                            "cost_cache_write",
                            models.FloatField(default=0, help_text="Dollars per million cache-write tokens"),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name": "LLM provider",
                        "db_table": "compaction_app_llmprovider",
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("is_summarizer_default", True)),
                                fields=("is_summarizer_default",),
                                name="one_default_summarizer",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[migrations.RunPython(claim_content_types, return_content_types)],
        ),
    ]
