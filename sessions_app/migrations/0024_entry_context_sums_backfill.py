"""Compute the running sums of every entry stored before they existed, one session at a time."""

from typing import Any

from django.db import migrations


def backfill(apps: Any, schema_editor: Any) -> None:
    from sessions_app.services.context_sums import backfill_sessions

    ChatSession = apps.get_model("sessions_app", "ChatSession")
    # Every session, deleted ones too (a purge may not have reached them); each is read in depth order
    # in chunks, so a big table costs time, not memory beyond one session's sums.
    # Outside one long transaction: each session commits its sums alone (``backfill_session``), so a run
    # stopped half-way resumes where it stopped, and appends wait for one session at most.
    ids = list(ChatSession._base_manager.order_by("pk").values_list("pk", flat=True))
    backfill_sessions(ids)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("sessions_app", "0023_entry_context_sums")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
