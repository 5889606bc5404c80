"""``manage.py ensure_demo``: create the demo login and import the sample sessions in demo/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandParser

from core.actors import command
from sessions_app.models import ChatSession
from sessions_app.services import import_jsonl

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"


class Command(BaseCommand):
    help = "Create the demo user (demo/demo) and import demo/*.jsonl for it unless it already owns sessions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", type=Path, default=Path(settings.BASE_DIR) / "demo")

    def handle(self, *args: Any, **options: Any) -> None:
        user = self._ensure_user()
        self.stdout.write(f"Demo login: {DEMO_USERNAME} / {DEMO_PASSWORD}")
        self._import_demo_sessions(user, options["dir"])

    def _ensure_user(self) -> AbstractBaseUser:
        user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        if created or not user.check_password(DEMO_PASSWORD):
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        return user

    def _import_demo_sessions(self, user: AbstractBaseUser, folder: Path) -> None:
        if ChatSession.objects.filter(owner=user).exists():
            self.stdout.write("Demo sessions already imported.")
            return
        for path in sorted(folder.glob("*.jsonl")):
            import_jsonl(actor=command("ensure_demo"), owner=user, data=path.read_bytes(), filename=path.name)
            self.stdout.write(f"Imported {path.name}")
