"""The action log takes over the table it had in sessions_app (no data moved)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ["actionlog"]


def _relabel(apps, source, target):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        # Where both exist (post_migrate already ran for the other side), the other side's row stays.
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def claim_content_types(apps, schema_editor):
    """Keep permissions and admin history: the content types follow the models to their new app."""
    _relabel(apps, "sessions_app", "actionlog")


def return_content_types(apps, schema_editor):
    _relabel(apps, "actionlog", "sessions_app")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("sessions_app", "0028_teams_and_action_log_moved"),
        ("teams", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ActionLog",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "actor_kind",
                            models.CharField(
                                choices=[
                                    ("user", "User"),
                                    ("link", "Link"),
                                    ("system", "System"),
                                    ("anonymous", "Anonymous"),
                                ],
                                default="user",
                                max_length=10,
                            ),
                        ),
                        (
                            "actor_name",
                            models.CharField(
                                blank=True,
                                default="",
                                help_text="The username, link or system actor; kept when the user is deleted",
                                max_length=150,
                            ),
                        ),
                        (
                            "action",
                            models.CharField(
                                choices=[
                                    ("import", "Import"),
                                    ("export", "Export"),
                                    ("navigate", "Navigate"),
                                    ("fork", "Fork"),
                                    ("clone", "Clone"),
                                    ("compact", "Compact"),
                                    ("share", "Share"),
                                    ("revoke", "Revoke"),
                                    ("label", "Label"),
                                    ("append", "Append"),
                                    ("rename", "Rename"),
                                    ("delete", "Delete"),
                                    ("run", "Run"),
                                    ("settings", "Settings"),
                                    ("create", "Create"),
                                    ("sync", "Sync"),
                                    ("purge", "Purge"),
                                    ("team_create", "Team Create"),
                                    ("team_invite", "Team Invite"),
                                    ("team_accept", "Team Accept"),
                                    ("team_decline", "Team Decline"),
                                    ("team_role", "Team Role"),
                                    ("team_leave", "Team Leave"),
                                    ("team_remove", "Team Remove"),
                                    ("team_withdraw", "Team Withdraw"),
                                    ("team_settings", "Team Settings"),
                                    ("team_sync", "Team Sync"),
                                    ("token_create", "Token Create"),
                                    ("token_revoke", "Token Revoke"),
                                    ("compact_refused", "Compact Refused"),
                                    ("compacted", "Compacted"),
                                    ("compact_failed", "Compact Failed"),
                                    ("branch_summary", "Branch Summary"),
                                    ("cancel", "Cancel"),
                                    ("abort", "Abort"),
                                    ("redact", "Redact"),
                                    ("hold", "Hold"),
                                    ("unhold", "Unhold"),
                                    ("policy", "Policy"),
                                    ("comment_create", "Comment Create"),
                                    ("comment_edit", "Comment Edit"),
                                    ("comment_delete", "Comment Delete"),
                                    ("comment_resolve", "Comment Resolve"),
                                    ("comment_reopen", "Comment Reopen"),
                                ],
                                max_length=16,
                            ),
                        ),
                        (
                            "session_label",
                            models.TextField(
                                blank=True, default="", help_text="Kept when the session is deleted"
                            ),
                        ),
                        (
                            "session_number",
                            models.BigIntegerField(
                                blank=True,
                                db_index=True,
                                help_text="The session's id, kept when it is purged",
                                null=True,
                            ),
                        ),
                        (
                            "team_label",
                            models.TextField(
                                blank=True, default="", help_text="Kept when the team is deleted"
                            ),
                        ),
                        ("detail", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "actor",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "session",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="sessions_app.chatsession",
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="teams.team",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "sessions_app_actionlog",
                        "ordering": ["-created_at"],
                        "indexes": [
                            models.Index(fields=["session", "-created_at"], name="actionlog_session_idx"),
                            models.Index(fields=["actor", "-created_at"], name="actionlog_actor_idx"),
                            models.Index(fields=["team", "-created_at"], name="actionlog_team_idx"),
                            models.Index(fields=["action", "-created_at"], name="actionlog_action_idx"),
                        ],
                    },
                ),
            ],
            database_operations=[migrations.RunPython(claim_content_types, return_content_types)],
        ),
    ]
