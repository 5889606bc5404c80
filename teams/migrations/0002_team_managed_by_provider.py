# Teams the identity provider's sign-ins created stay managed by it; every other team, including one a
# user made under a mapped name, stops receiving the provider's users.

from typing import Any

from django.db import migrations, models

from core.migration_ops import AddFieldIfMissing


def mark_provider_teams(apps: Any, schema_editor: Any) -> None:
    Team = apps.get_model("teams", "Team")
    ActionLog = apps.get_model("actionlog", "ActionLog")
    created_by_provider = ActionLog.objects.filter(
        action="team_create", actor_kind="system", actor_name="identity-provider", team__isnull=False
    ).values("team_id")
    Team.objects.filter(pk__in=created_by_provider).update(managed_by_provider=True)


class Migration(migrations.Migration):
    # The column commits at once; the marking follows outside its lock (running it again marks the same teams).
    atomic = False

    dependencies = [
        ("teams", "0001_initial"),
        ("actionlog", "0002_verbs_declared_by_apps"),
    ]

    operations = [
        AddFieldIfMissing(
            model_name="team",
            name="managed_by_provider",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="Memberships follow the identity provider's groups (PIWEB_OIDC_TEAM_MAP)",
            ),
        ),
        migrations.RunPython(mark_provider_teams, migrations.RunPython.noop),
    ]
