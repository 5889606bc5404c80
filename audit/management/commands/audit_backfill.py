"""``manage.py audit_backfill``: record omitted attempts stored before the audit was written on append."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from audit.omissions import backfill_omitted_attempts


class Command(BaseCommand):
    help = "Record omitted failed attempts for context edits stored before the audit was kept on append."

    def handle(self, *args: Any, **options: Any) -> None:
        total = 0
        while written := backfill_omitted_attempts():
            total += written
        self.stdout.write(f"{total} audit row(s) written.")
