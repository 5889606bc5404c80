"""Point Django at the benchmark database and Redis, create and migrate the database, and set Django up."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/piweb_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
BENCH_USER = "bench"

_ready: str | None = None  # "" once set up, else the reason it could not be


def configure_environment() -> None:
    """Fill in the settings module, DATABASE_URL and REDIS_URL unless the caller set them."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database named by url when it does not exist yet."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        return
    name = parts.path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ValueError(f"unexpected database name {name!r}")
    admin = urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def setup_django(*, migrate: bool = True) -> str:
    """Set Django up against the bench database once; return "" or the reason the DB metrics cannot run."""
    global _ready
    if _ready is not None:
        return _ready
    configure_environment()
    try:
        ensure_database(os.environ["DATABASE_URL"])
        import django

        django.setup()
        if migrate:
            from django.core.management import call_command

            call_command("migrate", interactive=False, verbosity=0)
        _ready = ""
    except Exception as exc:  # the in-memory metrics still run without a database
        _ready = f"database unavailable: {exc!r}"
    return _ready


def bench_user() -> object:
    """Return the benchmark's owner user, creating it when missing."""
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    return user
