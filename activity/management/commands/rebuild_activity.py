"""``manage.py rebuild_activity``: recount the team activity rollup from the sessions' own tables.

Run once after installing a release that brings the activity pages, for the sessions written before it;
``manage.py reconcile`` repairs the sessions the previous release wrote during an upgrade.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from activity.rollup import rebuild_session
from sessions_app.facade import ChatSession


class Command(BaseCommand):
    help = "Recount the team activity rollup of every session (or of the --session ids) from its tables."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", default=[], help="only this session id")

    def handle(self, *args: Any, **options: Any) -> None:
        pks = options["session"] or list(ChatSession.objects.order_by("pk").values_list("pk", flat=True))
        done = sum(rebuild_session(pk) for pk in pks)
        self.stdout.write(f"{done} session(s) recounted.")
