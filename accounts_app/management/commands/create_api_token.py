"""``manage.py create_api_token USERNAME``: print a new API token, creating the user if missing."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from accounts_app.api_tokens import create_api_token
from core.actors import command


class Command(BaseCommand):
    help = (
        "Print a new API token for USERNAME (for the Authorization: Bearer header), creating the user if "
        "needed. Only its hash is stored: the token is shown this once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", help="Also set this password, so the user can log in to the pages")
        parser.add_argument("--name", default="", help="What the token is for (a device or script)")

    def handle(self, *args: Any, **options: Any) -> None:
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        if options["password"]:
            user.set_password(options["password"])
            user.save(update_fields=["password"])
        elif created:
            # A token-only account: no password login until one is set.
            user.set_unusable_password()
            user.save(update_fields=["password"])
        _, token = create_api_token(actor=command("create_api_token"), user=user, name=options["name"])
        self.stdout.write(token)
