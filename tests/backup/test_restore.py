"""A backup made as docs/operations.md says (``pg_dump``) restores into a database that serves the team,
given the ``PIWEB_SECRETS_KEY`` it was made under; without that key only the provider keys are lost, and
the server says so instead of failing.

The backup is restored into a database of its own and served by a child process pointed at it, as a new
machine would be: its Django answers with the API token, the share link and the provider key made here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet
from django.db import connection

from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ApiToken
from tests.factories import session_file, small_tree
from tests.procs import database_url

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL backup"),
    pytest.mark.skipif(not shutil.which("pg_dump") or not shutil.which("pg_restore"), reason="no pg_dump"),
]

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-0123456789abcdefghij"

# Served from the restored database: the provider key, a token's API read, a link's page, the admin.
SERVE = """
import json, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
from django.contrib.auth import get_user_model
from providers.models import LLMProvider
setup_test_environment()
token, link, pk = sys.argv[1:4]
out = {}
provider = LLMProvider.objects.get(name="house")
try:
    out["key"] = provider.config().api_key
except ValueError as error:
    out["key"] = str(error)
api = Client().get(f"/api/sessions/{pk}/", HTTP_AUTHORIZATION=f"Bearer {token}")
out["api"] = [api.status_code, api.json().get("name") if api.status_code == 200 else None]
page = Client().get(f"/s/{link}/")
shared = Client().get(f"/api/sessions/{pk}/entries/", HTTP_X_SHARE_TOKEN=link)
out["link"] = [page.status_code, shared.status_code, "first answer" in shared.content.decode()]
staff = Client()
staff.force_login(get_user_model().objects.get(username="root"))
admin = staff.get("/admin/providers/llmprovider/")
out["admin"] = [admin.status_code, "cannot be decrypted" in admin.content.decode()]
print(json.dumps(out))
"""


def _env(url: str, **extra: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    return {**inherited, "DJANGO_SETTINGS_MODULE": "piweb.settings", "DATABASE_URL": url, **extra}


def _run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture
def restored() -> Iterator[str]:
    """An empty database for the restore, dropped afterwards."""
    base = database_url().rsplit("/", 1)[0]
    name = f"piweb_restored_{os.getpid()}"
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_restored_backup_serves_the_team_and_needs_the_secrets_key(
    restored: str, user: Any, tmp_path: Path, settings: Any
) -> None:
    owner = user("olga")
    user("root", is_staff=True, is_superuser=True)
    LLMProvider.objects.create(
        name="house", base_url="http://127.0.0.1:1/v1", model_id="m-1", provider="openai", api_key=KEY
    )
    session = services.import_jsonl(
        actor=owner, data=session_file(small_tree()), filename="kept.jsonl"
    ).session
    token = ApiToken.objects.create(user=owner)[1]
    link = services.create_share_link(session=session, actor=owner).raw_token
    # The key at rest is not the key: a dump holds only its ciphertext.
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key FROM compaction_app_llmprovider WHERE name = 'house'")
        assert KEY not in cursor.fetchone()[0]

    backup = tmp_path / "piweb.dump"
    _run(["pg_dump", "--format=custom", "--no-owner", f"--file={backup}", database_url()])
    _run(["pg_restore", "--no-owner", f"--dbname={restored}", str(backup)])
    args = [sys.executable, "-c", SERVE, token, link, str(session.pk)]
    # The key stays the process's: the one the backup was made under.
    secrets_key = {"PIWEB_SECRETS_KEY": settings.PIWEB_SECRETS_KEY}

    served = json.loads(_run(args, _env(restored, **secrets_key)).stdout.strip().splitlines()[-1])

    assert served == {
        "key": KEY,
        "api": [200, session.name],
        "link": [200, 200, True],
        "admin": [200, False],
    }

    other_key = {"PIWEB_SECRETS_KEY": Fernet.generate_key().decode()}
    served = json.loads(_run(args, _env(restored, **other_key)).stdout.strip().splitlines()[-1])
    check = _run([sys.executable, "manage.py", "check", "--database", "default"], _env(restored, **other_key))

    # Tokens and links are stored as hashes and sessions as they are: only the provider key is lost,
    # and every place that would use it says why.
    assert served["api"] == [200, session.name] and served["link"] == [200, 200, True]
    assert served["key"].startswith("The API key of provider 'house' cannot be decrypted: PIWEB_SECRETS_KEY")
    assert served["admin"] == [200, True]
    assert "providers.W001" in check.stderr and "house" in check.stderr
