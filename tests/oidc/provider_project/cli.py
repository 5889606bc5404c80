"""Set the test provider up, or change one of its users: ``python -m tests.oidc.provider_project.cli``.

``setup CLIENT_ID SECRET REDIRECT_URI`` migrates, makes a signing key and registers piweb as a client;
``user NAME PASSWORD EMAIL GROUPS [--unverified]`` creates or updates a user (GROUPS comma-separated).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc.provider_project.settings")

import django

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from oidc_provider.models import Client, ResponseType  # noqa: E402

from tests.oidc.provider_project.hooks import UNVERIFIED_GROUP  # noqa: E402


def setup(client_id: str, secret: str, redirect_uri: str) -> None:
    call_command("migrate", verbosity=0)
    call_command("creatersakey", verbosity=0)
    client = Client.objects.create(
        name="piweb",
        client_type="confidential",
        client_id=client_id,
        client_secret=secret,
        jwt_alg="RS256",
        require_consent=False,
        reuse_consent=True,
    )
    client.redirect_uris = [redirect_uri]
    client.scope = ["openid", "profile", "email"]
    client.save()
    client.response_types.add(ResponseType.objects.get(value="code"))


def user(name: str, password: str, email: str, groups: str, *flags: str) -> None:
    person, _ = User.objects.get_or_create(username=name)
    person.email = email
    person.set_password(password)
    person.save()
    wanted = [g for g in groups.split(",") if g] + ([UNVERIFIED_GROUP] if "--unverified" in flags else [])
    person.groups.set([Group.objects.get_or_create(name=g)[0] for g in wanted])


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"setup": setup, "user": user}[command](*args)
