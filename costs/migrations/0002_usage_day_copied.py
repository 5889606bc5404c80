"""The copies a fork or clone starts with get day rows of their own, which a user's and a team's usage
leave out (the source session counted those messages already)."""

from typing import Any

from django.db import migrations, models

from core.migration_ops import AddFieldIfMissing

_SPLIT = """
    INSERT INTO costs_usageday (session_id, day, model, copied, input, output, cache_read, cache_write,
                                cost, messages, unpriced)
    SELECT m.session_id, m.day, m.model, m.seq < s.copied_entries, sum(m.input), sum(m.output),
           sum(m.cache_read), sum(m.cache_write), sum(m.cost), count(*),
           sum(CASE WHEN m.source = 'unpriced' THEN 1 ELSE 0 END)
      FROM costs_messagecost m JOIN sessions_app_chatsession s ON s.id = m.session_id
     WHERE s.copied_entries > 0
     GROUP BY m.session_id, m.day, m.model, m.seq < s.copied_entries
"""


def record_and_split(apps: Any, schema_editor: Any) -> None:
    from django.db import transaction
    from django.db.models import Exists, OuterRef

    from costs.models import MessageCost
    from costs.recording import record
    from sessions_app.models import ChatSession

    # Sessions stored before costs were kept at append time (0001 leaves them to this migration).
    # Only the columns read here: later migrations may add others to these tables.
    recorded = MessageCost.objects.filter(session_id=OuterRef("pk"))
    found = (
        ChatSession.with_deleted.filter(next_seq__gt=0)
        .exclude(Exists(recorded))
        .values_list("pk", "next_seq", "copied_entries")
    )
    # Each session's rows commit together, so a run stopped half-way leaves whole sessions (and the next
    # run, finding their rows, passes them).
    for pk, next_seq, copied in list(found):
        session = ChatSession(pk=pk, copied_entries=copied)
        with transaction.atomic():
            record(ChatSession, session=session, first_seq=0, last_seq=next_seq - 1, rows=None)
    # Forks and clones recorded before: their day rows again, from their messages' own rows.
    with transaction.atomic(), schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM costs_usageday WHERE session_id IN "
            "(SELECT id FROM sessions_app_chatsession WHERE copied_entries > 0)"
        )
        cursor.execute(_SPLIT)


class Migration(migrations.Migration):
    # The recording runs session by session outside one long transaction (appends wait for one session).
    atomic = False

    dependencies = [
        ("costs", "0001_message_costs"),
        ("sessions_app", "0027_session_copied_entries"),
    ]

    operations = [
        AddFieldIfMissing(
            model_name="usageday",
            name="copied",
            field=models.BooleanField(
                default=False, help_text="Messages a fork or clone copied from its source (counted there)"
            ),
        ),
        migrations.RemoveConstraint(model_name="usageday", name="costs_usage_day"),
        migrations.AddConstraint(
            model_name="usageday",
            constraint=models.UniqueConstraint(
                fields=("session", "day", "model", "copied"), name="costs_usage_day"
            ),
        ),
        migrations.RunPython(record_and_split, migrations.RunPython.noop),
    ]
