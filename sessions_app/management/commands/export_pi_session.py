"""Write one stored session as a Pi session file."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app import services
from sessions_app.models import ChatSession


class Command(BaseCommand):
    help = "Export a session (by piweb id or Pi session id) as JSONL, byte for byte as stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="piweb session id (number) or Pi session id")
        parser.add_argument("-o", "--output", help="File to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        key = options["session"]
        matches = list(ChatSession.objects.filter(pi_id=key)[:2])
        if not matches and key.isdigit():
            matches = list(ChatSession.objects.filter(pk=int(key)))
        if not matches:
            raise CommandError(f"No session {key!r}")
        if len(matches) > 1:
            raise CommandError(f"Pi session id {key!r} is stored for several users; use the piweb id")
        session = matches[0]
        if options["output"]:
            with open(options["output"], "wb") as out:
                for chunk in services.export_jsonl(session):
                    out.write(chunk)
            self.stderr.write(f"wrote {options['output']}")
        else:
            for chunk in services.export_jsonl(session):
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
