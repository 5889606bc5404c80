"""A real OpenID Connect provider and a real piweb on loopback, for the sign-in tests.

The provider is django-oidc-provider in a project of its own (``provider_project``: its own settings and
SQLite database), served by Django's development server in a process of its own; piweb is daphne on the
test database with a private Redis (as in ``tests/live``), configured through the PIWEB_OIDC_* variables.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from tests.faults.stack import ROOT, Service, missing_tools
from tests.live.servers import AsgiServer, PrivateRedis, running, server_env
from tests.procs import free_port

CLIENT_ID = "piweb-test-client"
CLIENT_SECRET = "piweb-test-client-secret"
# libpq names the server's connections so, and only they are ended when the servers stop.
SERVER_APP_NAME = "piweb-oidc-test-server"
TEAM_MAP = "eng=Engineering:editor,ops=Ops:viewer,leads=Engineering:owner,eng-readers=Engineering:viewer"


@dataclass(slots=True)
class Provider:
    url: str
    folder: Path
    env: dict[str, str]

    @property
    def issuer(self) -> str:
        return f"{self.url}/openid"

    def misbehave(self, mode: str) -> None:
        """Make the provider's next tokens wrong in one way (tamper, expired, issuer, nonce), or ``""``."""
        (self.folder / "mode").write_text(mode)

    def person(self, name: str, email: str, groups: list[str], *, verified: bool = True) -> None:
        """Create or change a user at the provider (password ``pw-<name>``)."""
        flags = [] if verified else ["--unverified"]
        cli = [sys.executable, "-m", "tests.oidc.provider_project.cli", "user", name, f"pw-{name}", email]
        subprocess.run([*cli, ",".join(groups), *flags], cwd=ROOT, env=self.env, check=True)


@dataclass(slots=True)
class OidcStack:
    provider: Provider
    piweb: AsgiServer
    redis: PrivateRedis


def _start_provider(folder: Path, redirect_uri: str) -> tuple[Provider, Service]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "tests.oidc.provider_project.settings",
        "PROVIDER_DB": str(folder / "provider.sqlite3"),
        "PROVIDER_SITE_URL": url,
        "PROVIDER_MODE_FILE": str(folder / "mode"),
        "PYTHONUNBUFFERED": "1",
    }
    cli = [sys.executable, "-m", "tests.oidc.provider_project.cli"]
    subprocess.run([*cli, "setup", CLIENT_ID, CLIENT_SECRET, redirect_uri], cwd=ROOT, env=env, check=True)
    command = [sys.executable, "-m", "django", "runserver", "--noreload", f"127.0.0.1:{port}"]

    def healthy() -> bool:
        return httpx.get(f"{url}/openid/.well-known/openid-configuration", timeout=2).status_code == 200

    return Provider(url, folder, env), Service("provider", command, env, folder / "provider.log", healthy)


@pytest.fixture(scope="module")
def oidc_stack(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[OidcStack]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("oidc")
    redis = PrivateRedis(folder)
    with django_db_blocker.unblock():
        env = server_env(redis.url, PGAPPNAME=SERVER_APP_NAME)
    piweb = AsgiServer(env, folder)
    provider, provider_service = _start_provider(
        folder, f"{piweb.base_url}/accounts/oidc/sso/login/callback/"
    )
    env.update(
        PIWEB_OIDC_ISSUER=provider.issuer,
        PIWEB_OIDC_CLIENT_ID=CLIENT_ID,
        PIWEB_OIDC_CLIENT_SECRET=CLIENT_SECRET,
        PIWEB_OIDC_NAME="Sign in with Example SSO",
        PIWEB_OIDC_TEAM_MAP=TEAM_MAP,
    )
    with running(redis):
        provider_service.start()
        try:
            with running(piweb):
                yield OidcStack(provider, piweb, redis)
        finally:
            provider_service.stop()
            # The server's pooled connections may outlive it for a moment and keep the test database from
            # being dropped; only those are ended (this process's own connections are still in use).
            with django_db_blocker.unblock(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = %s",
                    [SERVER_APP_NAME],
                )


@pytest.fixture(autouse=True)
def _committed(transactional_db: None, oidc_stack: OidcStack) -> Iterator[None]:
    """The servers read what the tests write, so every test commits; the provider starts well-behaved."""
    oidc_stack.provider.misbehave("")
    yield


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, html[:2000]
    return found.group(1)


def sign_in(
    stack: OidcStack, name: str, *, client: httpx.Client | None = None
) -> tuple[httpx.Client, httpx.Response]:
    """Sign in to piweb through the provider over plain HTTP (following redirects); return the client and
    the last answer."""
    http = client or httpx.Client(follow_redirects=True, timeout=20)
    page = http.get(f"{stack.piweb.base_url}/accounts/login/")
    sso = re.search(r'<form method="post" action="([^"]+)" class="stack" id="sso-form">', page.text)
    assert sso, page.text[:2000]
    at_provider = http.post(
        stack.piweb.base_url + sso.group(1), data={"csrfmiddlewaretoken": csrf_of(page.text)}
    )
    assert at_provider.url.path == "/accounts/login/" and at_provider.url.port != stack.piweb.port, (
        at_provider.url
    )
    answer = http.post(
        str(at_provider.url),
        data={
            "csrfmiddlewaretoken": csrf_of(at_provider.text),
            "username": name,
            "password": f"pw-{name}",
            "next": re.search(r'name="next" value="([^"]*)"', at_provider.text)
            .group(1)
            .replace("&amp;", "&"),  # type: ignore[union-attr]
        },
        headers={"Referer": str(at_provider.url)},
    )
    return http, answer
