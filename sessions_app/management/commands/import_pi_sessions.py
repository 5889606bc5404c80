"""Import Pi session files, or whole folders of them such as ~/.pi/agent/sessions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actors import command
from sessions_app import services


class Command(BaseCommand):
    help = (
        "Import Pi session files (.jsonl); folders are searched recursively. Re-imports append new entries."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="Session files or folders")
        parser.add_argument("--user", required=True, help="Username that will own the sessions")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            owner = get_user_model().objects.get_by_natural_key(options["user"])
        except get_user_model().DoesNotExist as exc:
            raise CommandError(f"No user named {options['user']!r}") from exc
        failures = 0
        for path in _session_files([Path(p).expanduser() for p in options["paths"]]):
            try:
                with path.open("rb") as stream:
                    result = services.import_stream(
                        actor=command("import_pi_sessions"), owner=owner, stream=stream, filename=path.name
                    )
            except (OSError, services.InvalidSessionFile) as exc:
                failures += 1
                self.stderr.write(f"{path}: error: {exc}")
                continue
            action = "created" if result.created else "updated"
            report = result.skipped
            skipped = ", ".join(f"line {s.line_no} ({s.reason})" for s in report.lines) or "none"
            if report.unlisted:
                skipped += f" and {report.unlisted} more"
            session = result.session.pk
            self.stdout.write(
                f"{path}: {action} session {session}, appended {result.appended}, skipped: {skipped}"
            )
        if failures:
            self.stderr.write(f"{failures} file(s) could not be imported")


def _session_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        else:
            yield path
