"""``manage.py send_team_digest TEAM``: send a team's weekly digest now (members who had it get none)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from activity import services
from core.actors import command
from core.errors import NotVisible


class Command(BaseCommand):
    help = "Send one team's weekly activity digest now, of last week unless --week names a day of another."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", type=int, help="the team's id")
        parser.add_argument("--week", type=date.fromisoformat, help="a day of the week to tell of")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            outcome = services.send_team_digest(
                actor=command("send_team_digest"), team_id=options["team"], week=options["week"]
            )
        except NotVisible as e:
            raise CommandError(str(e)) from None
        self.stdout.write(
            f"Team {outcome.team}, week of {outcome.week.isoformat()}: {outcome.sent} sent, "
            f"{outcome.skipped} not (opted out, no address, or sent before)."
        )
