"""The migrations that keep costs record the sessions stored before them, and set apart the copies of the
forks and clones made before copies were told apart."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

from django.db import connection

from costs.models import MessageCost, UsageDay
from costs.queries import own_sessions, session_totals, usage_report
from costs.recording import recount_session
from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import assistant_message, session_file, small_tree, user_message

migration = importlib.import_module("costs.migrations.0002_usage_day_copied")
copies = importlib.import_module("sessions_app.migrations.0027_session_copied_entries")
EDITOR = SimpleNamespace(connection=connection)  # what the migrations' data steps use of a schema editor


def test_the_backfill_records_what_was_stored_before(user: Any) -> None:
    owner = user("old")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    kept = (MessageCost.objects.filter(session=session).count(), session_totals([session.pk]))
    MessageCost.objects.all().delete()
    UsageDay.objects.all().delete()

    migration.record_and_split(None, EDITOR)

    assert kept[0] == 3
    assert (MessageCost.objects.filter(session=session).count(), session_totals([session.pk])) == kept


def test_forks_made_before_stop_counting_their_copies_for_their_owner(user: Any) -> None:
    owner = user("ann")
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.5}}
    entries = [user_message("u1", None, "hi"), assistant_message("a1", "u1", "ok", usage=usage)]
    source = services.import_jsonl(actor=owner, data=session_file(entries)).session
    fork = services.fork_session(session=source, entry_id="a1", actor=owner).session
    services.append_entries(
        session=fork, actor=owner, entries=[assistant_message("a2", "a1", "more", usage=usage)]
    )
    copied = fork.copied_entries
    # As a fork made before this change was stored: no copies marked, every message in its day rows.
    ChatSession.objects.filter(pk=fork.pk).update(copied_entries=0)
    UsageDay.objects.filter(session=fork).delete()
    recount_session(fork.pk)
    assert usage_report(own_sessions(owner)).totals.messages == 3

    copies.count_copies(None, EDITOR)
    migration.record_and_split(None, EDITOR)

    fork.refresh_from_db()
    assert copied == 2 and fork.copied_entries == copied  # u1 and a1
    assert usage_report(own_sessions(owner)).totals.messages == 2
    assert session_totals([fork.pk])[fork.pk].messages == 2  # the fork's own total still holds its copy
