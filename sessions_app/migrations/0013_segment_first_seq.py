"""The first entry of each segment, so a path through consecutive segments is known without reading entries."""

from django.db import migrations, models

FILL_SQL = (
    "UPDATE sessions_app_segment SET first_seq = (SELECT min(e.seq) FROM sessions_app_entry e "
    'WHERE e.session_id = sessions_app_segment.session_id AND e.segment = sessions_app_segment."index")'
)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0012_pin_path_links"),
    ]

    operations = [
        migrations.AddField(
            model_name="segment",
            name="first_seq",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.RunSQL(FILL_SQL, migrations.RunSQL.noop),
    ]
