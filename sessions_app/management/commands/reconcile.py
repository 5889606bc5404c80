"""``manage.py reconcile``: repair the bookkeeping of sessions the old release wrote during an upgrade."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.services.reconcile import Reconciled, reconcile


def _summary(done: Reconciled) -> str:
    parts = ", ".join(f"{what} {n}" for what, n in sorted(done.repaired.items())) or "nothing"
    return f"{done.checked} session(s) checked up to id {done.last_pk}; repaired: {parts}"


class Command(BaseCommand):
    help = (
        "Check every session's stored bytes, context sums, tool index, cost and usage rows against its "
        "entries and repair those the previous release left missing or stale while an upgrade ran (and "
        "index the tool calls of sessions stored before that index existed). Run it once the new release "
        "serves every request; safe to stop and run again (--after resumes)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--after", type=int, default=0, help="start after this session id")
        parser.add_argument("--batch", type=int, default=200, help="sessions per batch")

    def handle(self, *args: Any, **options: Any) -> None:
        done = reconcile(
            after=options["after"],
            batch=options["batch"],
            progress=lambda d: self.stderr.write(_summary(d)),
        )
        self.stdout.write(_summary(done))
