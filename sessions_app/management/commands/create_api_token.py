"""``manage.py create_api_token USERNAME``: print the user's API token, creating the user if missing."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = (
        "Print USERNAME's API token (for the Authorization: Token header), creating user and token if needed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", help="Also set this password, so the user can log in to the pages")

    def handle(self, *args: Any, **options: Any) -> None:
        user, created = get_user_model().objects.get_or_create(username=options["username"])
        if options["password"]:
            user.set_password(options["password"])
            user.save(update_fields=["password"])
        elif created:
            # A token-only account: no password login until one is set.
            user.set_unusable_password()
            user.save(update_fields=["password"])
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
