"""``manage.py sessiontool COMMAND ...``: domain answers as JSON, one command or a stdin batch."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from compaction_app.sessiontool import COMMANDS, dump, resolve


def _answer(argv: list[str]) -> object:
    if not argv:
        return {"error": "empty argv"}
    try:
        return resolve(argv[0])(argv[1:])
    except Exception as exc:  # a crash in one batch line must not kill the batch
        traceback.print_exc(file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"}


class Command(BaseCommand):
    help = f"Print domain answers as JSON. Commands: {', '.join(COMMANDS)}, batch."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("argv", nargs="*")

    def run_from_argv(self, argv: list[str]) -> None:
        # Pass everything after the command name through untouched: argv holds values like --leaf=null.
        self.execute(*argv[2:])

    def execute(self, *args: Any, **options: Any) -> None:
        argv = list(args)
        if not argv:
            raise CommandError("usage: sessiontool COMMAND ARGS... | sessiontool batch")
        if argv[0] == "batch":
            for line in sys.stdin:
                if not line.strip():
                    continue
                sys.stdout.write(dump(_answer(json.loads(line))) + "\n")
                sys.stdout.flush()
            return
        if argv[0] not in COMMANDS:
            raise CommandError(f"unknown command {argv[0]!r}")
        sys.stdout.write(dump(_answer(argv)) + "\n")
