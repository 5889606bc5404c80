"""``manage.py recount_costs``: record sessions' costs again at today's prices (after a price change)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from costs.recording import recount_session
from sessions_app.facade import ChatSession


class Command(BaseCommand):
    help = (
        "Record the cost of every assistant message again: messages without a cost recorded by Pi are "
        "priced at the prices now set in the admin. Recorded costs do not change."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", default=[], help="only this session id")

    def handle(self, *args: Any, **options: Any) -> None:
        pks = options["session"] or list(ChatSession.objects.order_by("pk").values_list("pk", flat=True))
        messages = sum(recount_session(pk) for pk in pks)
        self.stdout.write(f"{len(pks)} session(s), {messages} assistant message(s) recounted.")
