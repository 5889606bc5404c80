"""Teams take over the tables they had in sessions_app (no data moved)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ["team", "teammembership", "teaminvitation"]


def _relabel(apps, source, target):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        # Where both exist (post_migrate already ran for the other side), the other side's row stays.
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def claim_content_types(apps, schema_editor):
    """Keep permissions and admin history: the content types follow the models to their new app."""
    _relabel(apps, "sessions_app", "teams")


def return_content_types(apps, schema_editor):
    _relabel(apps, "teams", "sessions_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("sessions_app", "0027_session_copied_entries"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Team",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "default_share",
                            models.CharField(
                                blank=True,
                                choices=[("", "not shared"), ("viewer", "Viewer"), ("editor", "Editor")],
                                db_default="",
                                default="",
                                help_text="Sessions members import or sync are shared with the team with this access when created",
                                max_length=10,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_team",
                    },
                ),
                migrations.CreateModel(
                    name="TeamInvitation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[("owner", "Owner"), ("editor", "Editor"), ("viewer", "Viewer")],
                                default="viewer",
                                max_length=10,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "invited_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="invitations",
                                to="teams.team",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="team_invitations",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_teaminvitation",
                        "constraints": [
                            models.UniqueConstraint(fields=("team", "user"), name="unique_team_invitation")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TeamMembership",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "role",
                            models.CharField(
                                choices=[("owner", "Owner"), ("editor", "Editor"), ("viewer", "Viewer")],
                                default="viewer",
                                max_length=10,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="memberships",
                                to="teams.team",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="team_memberships",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_teammembership",
                        "constraints": [
                            models.UniqueConstraint(fields=("team", "user"), name="unique_team_member")
                        ],
                    },
                ),
            ],
            database_operations=[migrations.RunPython(claim_content_types, return_content_types)],
        ),
    ]
