# Rows written before the actor columns: their actor's name and session number, as new rows have them.
# A migration of its own, so the columns and indexes are committed before rows change.

from django.db import migrations
from django.db.models import F


def name_actors(apps, schema_editor):
    # Rows written before: keep the username and the session's id, as new rows do.
    ActionLog = apps.get_model("sessions_app", "ActionLog")
    ActionLog.objects.filter(session__isnull=False).update(session_number=F("session_id"))
    for row in ActionLog.objects.filter(actor__isnull=False).select_related("actor").iterator():
        ActionLog.objects.filter(pk=row.pk).update(actor_name=row.actor.username)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0018_action_log_actors"),
    ]

    operations = [
        migrations.RunPython(name_actors, migrations.RunPython.noop),
    ]
