"""The project wiring: env-driven service choice, schema, admin, deployment checks, demo data."""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from piweb import config

BASE = Path("/srv/piweb")
REPO = Path(__file__).resolve().parent.parent


def test_without_env_the_database_is_a_sqlite_file_under_data() -> None:
    db = config.database_config({}, base_dir=BASE)
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == "/srv/piweb/.data/piweb.sqlite3"


def test_database_url_selects_postgres() -> None:
    db = config.database_config(
        {"DATABASE_URL": "postgres://app:secret@db.internal:5433/piweb"}, base_dir=BASE
    )
    assert db["ENGINE"] == "piweb.db.postgresql"
    assert (db["HOST"], db["PORT"], db["NAME"], db["USER"]) == ("db.internal", 5433, "piweb", "app")


def test_postgres_connections_come_from_a_pool_sized_by_the_environment() -> None:
    url = {"DATABASE_URL": "postgres://app:secret@db.internal:5433/piweb"}
    db = config.database_config(url, base_dir=BASE)
    # Short-lived: every request or task hands its connection back to the process's pool.
    assert db["CONN_MAX_AGE"] == 0
    assert db["OPTIONS"]["pool"]["max_size"] == config.DB_POOL_MAX
    env = {**url, "PIWEB_DB_POOL_MAX": "3", "PIWEB_DB_POOL_MIN": "5", "PIWEB_DB_POOL_TIMEOUT": "2.5"}
    pool = config.database_config(env, base_dir=BASE)["OPTIONS"]["pool"]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (3, 3, 2.5)
    # 0: no pool, a persistent connection per thread (a WSGI server's threads).
    unpooled = config.database_config({**url, "PIWEB_DB_POOL_MAX": "0"}, base_dir=BASE)
    assert "pool" not in unpooled.get("OPTIONS", {})
    assert unpooled["CONN_MAX_AGE"] == 60
    for bad in ("many", "-1"):
        with pytest.raises(ValueError, match="PIWEB_DB_POOL_MAX"):
            config.database_config({**url, "PIWEB_DB_POOL_MAX": bad}, base_dir=BASE)


def test_operation_workers_get_a_small_pool_and_run_workers_the_configured_one() -> None:
    from piweb import workers

    env = {"DATABASE_URL": "postgres://app@db/piweb", "REDIS_URL": "redis://r/0", "PIWEB_DB_POOL_MAX": "6"}
    runs, operations = workers.worker_environments(env)
    assert runs["PIWEB_DB_POOL_MAX"] == "6"
    assert operations["PIWEB_DB_POOL_MAX"] == str(config.OPERATIONS_DB_POOL_MAX)
    assert workers.worker_environments({**env, "PIWEB_DB_POOL_MAX": "0"})[1]["PIWEB_DB_POOL_MAX"] == "0"


def test_beat_state_is_never_a_file_a_killed_group_left_for_the_same_pid() -> None:
    """A group killed with SIGKILL leaves its beat state behind; pids are reused, so the next group's
    file must not be found from the pid alone."""
    from piweb import workers

    mine = workers.beat_schedule_file()
    assert workers.beat_schedule_file() == mine  # one file per group, removed when it stops
    assert mine.name.startswith(f"piweb-beat-{os.getpid()}-")
    assert mine != mine.parent / f"piweb-beat-{os.getpid()}"
    assert workers.beat_options({})[-1] == f"--schedule={mine}"


def test_without_redis_the_channel_layer_is_in_memory_and_celery_uses_files() -> None:
    layer = config.channel_layers_config({}, base_dir=BASE)["default"]
    # Groups in memory, events across processes through a file beside the embedded database.
    assert layer["BACKEND"] == "piweb.embedded_layer.EmbeddedChannelLayer"
    assert layer["CONFIG"]["path"] == "/srv/piweb/.data/live.sqlite3"
    assert config.celery_broker({}) == "filesystem://"
    options = config.celery_broker_transport_options({}, base_dir=BASE)
    # Web process and worker must read and write the same queue folder.
    assert options["data_folder_in"] == options["data_folder_out"] == "/srv/piweb/.data/celery/queue"
    assert options["control_folder"].startswith("/srv/piweb/.data/")


def test_redis_url_selects_redis_for_channels_and_celery() -> None:
    env = {"REDIS_URL": "redis://cache:6379/2"}
    layer = config.channel_layers_config(env, base_dir=BASE)["default"]
    assert layer["BACKEND"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    (host,) = layer["CONFIG"]["hosts"]
    assert host["address"] == "redis://cache:6379/2"
    # An idle socket's blocking read must end before the connection's own timeout does.
    assert host["socket_timeout"] > config.LAYER_BLOCKING_READ
    assert config.celery_broker(env) == "redis://cache:6379/2"
    # kombu's Redis transport looks for the tasks of dead workers every 100 s; every 10 s here, and at
    # most a quarter of a shorter visibility timeout apart.
    options = config.celery_broker_transport_options(env, base_dir=BASE)
    assert options == {"unacked_restore_throttle": 1, "unacked_restore_interval": 10}
    shorter = {**env, "PIWEB_CELERY_VISIBILITY_TIMEOUT": "20"}
    options = config.celery_broker_transport_options(shorter, base_dir=BASE)
    assert (options["visibility_timeout"], options["unacked_restore_interval"]) == (20, 5)


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("true", True), ("0", False), ("no", False), ("", True)]
)
def test_env_flag(raw: str, expected: bool) -> None:
    assert config.env_flag({"X": raw}, "X", default=True) is expected


def test_celery_is_configured_for_at_least_once_delivery() -> None:
    from piweb.celery import app

    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1


def test_schema_is_an_openapi_document(client: Client) -> None:
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    document = json.loads(response.content)
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "piweb API"
    assert isinstance(document["paths"], dict)


def test_api_docs_use_local_assets_only(client: Client) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert "cdn.jsdelivr.net" not in page and "unpkg.com" not in page


@pytest.mark.django_db
def test_admin_login_page_renders(client: Client) -> None:
    response = client.get("/admin/login/", {"next": "/admin/"}, follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [("/accounts/login/?next=%2Fadmin%2F", 302)]
    assert b'name="username"' in response.content


@pytest.mark.django_db
def test_site_login_page_logs_a_user_in(client: Client, user: Callable[..., Any]) -> None:
    user("ada", password="correct horse")
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "ada", "password": "correct horse"})
    assert response.status_code == 302
    assert client.session.get("_auth_user_id")


@pytest.mark.django_db
def test_api_client_fixture_is_authenticated(api_client: APIClient) -> None:
    assert api_client.user.is_authenticated


@pytest.mark.django_db
def test_ensure_demo_creates_a_demo_login_and_is_repeatable(client: Client) -> None:
    call_command("ensure_demo")
    call_command("ensure_demo")
    assert client.login(username="demo", password="demo")


def test_demo_sessions_are_v3_files_with_a_branch_and_a_compaction() -> None:
    files = sorted((REPO / "demo").glob("*.jsonl"))
    assert len(files) >= 2
    types: set[str] = set()
    for path in files:
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        assert entries[0]["type"] == "session" and entries[0]["version"] == 3
        ids = {e["id"] for e in entries[1:]}
        assert len(ids) == len(entries) - 1
        assert all(e["parentId"] is None or e["parentId"] in ids for e in entries[1:])
        types |= {e["type"] for e in entries}
        parents = [e["parentId"] for e in entries[1:]]
        if len(parents) != len(set(parents)):
            types.add("(branch)")
    assert {"compaction", "branch_summary", "(branch)"} <= types


def test_check_deploy_is_clean_with_production_settings(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "PIWEB_"))}
    env |= {
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(50)),
        "DJANGO_ALLOWED_HOSTS": "example.com",
        "PIWEB_SECRETS_KEY": "FDlzDBgUBl4k5rEhKc8xgcXJw6Sx6g9G5n8VdXh8Y0o=",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "PIWEB_"))}
    env |= {
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "example.com",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr
