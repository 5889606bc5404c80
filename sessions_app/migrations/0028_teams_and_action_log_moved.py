"""Teams and the action log moved to apps of their own: the tables stay where they are, only the model state moves."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("discussion", "0002_team_moved"),
        ("governance", "0002_team_moved"),
        ("sessions_app", "0027_session_copied_entries"),
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(
                    model_name="actionlog",
                    name="actionlog_session_idx",
                ),
                migrations.RemoveIndex(
                    model_name="actionlog",
                    name="actionlog_actor_idx",
                ),
                migrations.RemoveIndex(
                    model_name="actionlog",
                    name="actionlog_team_idx",
                ),
                migrations.RemoveIndex(
                    model_name="actionlog",
                    name="actionlog_action_idx",
                ),
                migrations.AlterField(
                    model_name="sessionshare",
                    name="team",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="shares", to="teams.team"
                    ),
                ),
                migrations.RemoveConstraint(
                    model_name="teaminvitation",
                    name="unique_team_invitation",
                ),
                migrations.RemoveConstraint(
                    model_name="teammembership",
                    name="unique_team_member",
                ),
                migrations.RemoveField(
                    model_name="teaminvitation",
                    name="invited_by",
                ),
                migrations.RemoveField(
                    model_name="teaminvitation",
                    name="team",
                ),
                migrations.RemoveField(
                    model_name="teaminvitation",
                    name="user",
                ),
                migrations.RemoveField(
                    model_name="teammembership",
                    name="team",
                ),
                migrations.RemoveField(
                    model_name="teammembership",
                    name="user",
                ),
                migrations.DeleteModel(
                    name="ActionLog",
                ),
                migrations.DeleteModel(
                    name="TeamInvitation",
                ),
                migrations.DeleteModel(
                    name="Team",
                ),
                migrations.DeleteModel(
                    name="TeamMembership",
                ),
            ],
            database_operations=[],
        ),
    ]
