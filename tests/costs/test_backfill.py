"""The migration that adds costs records those of the sessions stored before it."""

from __future__ import annotations

import importlib
from typing import Any

from piweb.costs.models import MessageCost, UsageDay
from piweb.costs.queries import session_totals
from sessions_app import services
from tests.factories import session_file, small_tree

migration = importlib.import_module("piweb.costs.migrations.0001_message_costs")


def test_the_backfill_records_what_was_stored_before(user: Any) -> None:
    owner = user("old")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    kept = (MessageCost.objects.filter(session=session).count(), session_totals([session.pk]))
    MessageCost.objects.all().delete()
    UsageDay.objects.all().delete()

    migration.backfill(None, None)

    assert kept[0] == 3
    assert (MessageCost.objects.filter(session=session).count(), session_totals([session.pk])) == kept
