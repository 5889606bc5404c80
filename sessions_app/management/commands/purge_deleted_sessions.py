"""``manage.py purge_deleted_sessions``: finish deleting sessions whose background purge did not end."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from core.actors import command
from sessions_app.services import purge_deleted_sessions


class Command(BaseCommand):
    help = (
        "Delete the rows of every session its owner deleted that are still stored (the worker does this "
        "in the background and again when it starts; running it twice is harmless)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        purged = purge_deleted_sessions(actor=command("purge_deleted_sessions"))
        self.stdout.write(f"purged {purged} deleted session{'' if purged == 1 else 's'}")
