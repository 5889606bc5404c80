"""Turn environment variables into settings values; pure functions, so the service choice is testable."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

MIB = 1024 * 1024


def env_flag(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    """Read a boolean flag; "1", "true", "yes" and "on" are true, anything else set is false."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_json(env: Mapping[str, str], name: str) -> Any:
    """Read a JSON value (a settings block); unset or blank is None, invalid JSON stops the start."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be JSON: {exc}") from None


def env_list(env: Mapping[str, str], name: str) -> list[str]:
    """Read a comma-separated list, dropping blanks."""
    return [part.strip() for part in env.get(name, "").split(",") if part.strip()]


def data_dir(base_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """Return the folder for the embedded database and the local broker (PIWEB_DATA_DIR, else .data/)."""
    configured = (env or {}).get("PIWEB_DATA_DIR", "").strip()
    return Path(configured).resolve() if configured else base_dir / ".data"


# The web process and the worker write one SQLite file at the same time. Write-ahead logging lets readers
# and one writer proceed together; immediate transactions take the write lock when they begin, so a
# transaction never fails while upgrading a read lock; the busy timeout makes writers queue for the lock
# instead of answering "database is locked".
SQLITE_OPTIONS: dict[str, Any] = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


# The connection budget (README "Connection budget"). Every process that serves concurrently (a web
# process, a runs worker) draws its PostgreSQL connections from one pool of at most DB_POOL_MAX; a request,
# a socket event or a task holds one only while it runs, then hands it back. Operations processes run one
# task at a time and get a pool of OPERATIONS_DB_POOL_MAX (the task, and a helper thread at most).
DB_POOL_MAX = 8
DB_POOL_MIN = 1
DB_POOL_TIMEOUT = 20.0  # seconds a request waits for a free connection before it fails
DB_POOL_MAX_IDLE = 300.0  # seconds an extra idle connection stays open
OPERATIONS_DB_POOL_MAX = 2


def _env_number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum:g}, not {raw!r}")
    return value


def database_pool(env: Mapping[str, str]) -> dict[str, Any] | None:
    """Return the psycopg pool options of one process (``OPTIONS["pool"]``), or None when
    ``PIWEB_DB_POOL_MAX`` is 0 (a persistent connection per thread, as under a WSGI server)."""
    max_size = int(_env_number(env, "PIWEB_DB_POOL_MAX", DB_POOL_MAX, minimum=0))
    if max_size == 0:
        return None
    min_size = min(int(_env_number(env, "PIWEB_DB_POOL_MIN", DB_POOL_MIN, minimum=0)), max_size)
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": _env_number(env, "PIWEB_DB_POOL_TIMEOUT", DB_POOL_TIMEOUT, minimum=0.1),
        "max_idle": DB_POOL_MAX_IDLE,
    }


# Threads per web process serving HTTP requests (``piweb.threaded_wsgi``): by default as many as it has
# database connections, so a request never waits for one behind another request.
HTTP_THREADS = DB_POOL_MAX


def http_threads(env: Mapping[str, str]) -> int:
    """Return how many HTTP requests one web process runs at a time: ``PIWEB_HTTP_THREADS``, else its
    pool's ``PIWEB_DB_POOL_MAX`` (``HTTP_THREADS`` without a pool)."""
    pool = database_pool(env)
    default = int(pool["max_size"]) if pool is not None else HTTP_THREADS
    return int(_env_number(env, "PIWEB_HTTP_THREADS", default, minimum=1))


def database_config(env: Mapping[str, str], *, base_dir: Path) -> dict[str, Any]:
    """Return the default DATABASES entry: DATABASE_URL if set, else a SQLite file under .data/."""
    url = env.get("DATABASE_URL", "").strip()
    if url:
        parsed = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
        if parsed["ENGINE"] == "django.db.backends.postgresql":
            # The same backend, with a health check that asks the socket before it sends SELECT 1.
            parsed["ENGINE"] = "piweb.db.postgresql"
            pool = database_pool(env)
            if pool is not None:
                # Pooled connections are short-lived by definition: each goes back to the pool at the end
                # of its request or task (Django refuses persistent ones with a pool), and the pool checks
                # a connection before lending it. Under ASGI a persistent connection stays with the thread
                # that ran the request, so every concurrent request would keep one open.
                parsed["CONN_MAX_AGE"] = 0
                parsed["OPTIONS"] = {**parsed.get("OPTIONS", {}), "pool": pool}
        if parsed["ENGINE"].endswith("sqlite3"):
            parsed["OPTIONS"] = {**SQLITE_OPTIONS, **parsed.get("OPTIONS", {})}
        return dict(parsed)
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(data_dir(base_dir, env) / "piweb.sqlite3"),
        "OPTIONS": dict(SQLITE_OPTIONS),
    }


# channels_redis's list-based layer waits for a socket's next message with a blocking Redis read of this
# many seconds (its pub/sub layer polls in 0.1 s steps).
LAYER_BLOCKING_READ = 5
# redis-py 8 gives every connection a 5 s socket timeout, equal to that read: an idle socket's read then
# times out on the client side and the consumer dies with 1011. The timeout must outlive the read.
LAYER_SOCKET_TIMEOUT = 30
LAYER_RETRIES = 3


def channel_layers_config(env: Mapping[str, str], *, base_dir: Path) -> dict[str, Any]:
    """Return CHANNEL_LAYERS: Redis if REDIS_URL is set, else the embedded layer that crosses processes."""
    url = env.get("REDIS_URL", "").strip()
    if url:
        host = {
            "address": url,
            "socket_timeout": LAYER_SOCKET_TIMEOUT,
            "socket_connect_timeout": 5,
            "socket_keepalive": True,
            # A connection that sat idle behind a firewall or a Redis restart is checked before use.
            "health_check_interval": LAYER_SOCKET_TIMEOUT,
            # After a Redis restart the first command on an old connection fails: connect again (the
            # subscriptions with it) and retry, instead of failing the socket that sent it with a 500.
            "retry_on_error": [RedisConnectionError],
            "retry": Retry(ExponentialBackoff(cap=1.0, base=0.1), LAYER_RETRIES),
        }
        # Pub/sub: one PUBLISH per event, and each web process fans it out to its own sockets in memory
        # (the list-based layer pushes one Redis message per socket). After a Redis restart the process
        # subscribes again by itself, where the list layer leaves sockets in groups Redis forgot. Events
        # are hints either way: a client that misses one catches up through the sequence resync.
        # Pub/sub channels belong to the whole Redis server, not to a database: the prefix names the
        # database, so two installations (or test runs) on one Redis never hear each other's events.
        database = url.rpartition("/")[2]
        prefix = f"asgi.db{database}." if database.isdigit() else "asgi"
        return {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [host], "prefix": prefix},
            }
        }
    # No Redis: events from the worker and commands reach the web process through a SQLite file.
    return {
        "default": {
            "BACKEND": "piweb.embedded_layer.EmbeddedChannelLayer",
            "CONFIG": {"path": str(data_dir(base_dir, env) / "live.sqlite3")},
        }
    }


def cache_config(env: Mapping[str, str]) -> dict[str, Any]:
    """Return CACHES: Redis if REDIS_URL is set (shared by every process), else process memory.

    "shared" is the same store under its own name, for entries that must stay shared when a test or a
    deployment swaps "default" (the tree overview cache, cached token lookups).
    """
    url = env.get("REDIS_URL", "").strip()
    if url:
        redis = {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "piweb",
        }
        return {"default": redis, "shared": redis}
    local = "django.core.cache.backends.locmem.LocMemCache"
    return {"default": {"BACKEND": local}, "shared": {"BACKEND": local, "LOCATION": "piweb-shared"}}


def celery_broker(env: Mapping[str, str]) -> str:
    """Return the Celery broker URL: REDIS_URL if set, else kombu's filesystem transport."""
    return env.get("REDIS_URL", "").strip() or "filesystem://"


def celery_broker_transport(env: Mapping[str, str]) -> str | None:
    """Return the broker's transport class: piweb's Redis transport (``piweb.broker``) with Redis."""
    return None if celery_broker(env) == "filesystem://" else "piweb.broker:Transport"


# kombu hands a dead worker's tasks out again only when a worker sweeps the unacknowledged set, which
# its Redis transport does on every tenth tick of a 10 s timer: 100 s between sweeps, whatever the
# visibility timeout. Every tick sweeps here, at most a quarter of the timeout apart (one ZRANGE each).
RESTORE_EVERY_SECONDS = 10


def celery_broker_transport_options(env: Mapping[str, str], *, base_dir: Path) -> dict[str, Any]:
    """Return transport options; the filesystem broker needs folders shared by web and worker processes.

    With Redis: ``PIWEB_CELERY_VISIBILITY_TIMEOUT`` (seconds before a task whose worker died is handed
    out again; kombu's default is 1 h), and sweeps frequent enough to honour it.
    """
    if celery_broker(env) != "filesystem://":
        visibility = int(_env_number(env, "PIWEB_CELERY_VISIBILITY_TIMEOUT", 0, minimum=0))
        options: dict[str, Any] = {"unacked_restore_throttle": 1}
        options["unacked_restore_interval"] = RESTORE_EVERY_SECONDS
        if visibility:
            options["visibility_timeout"] = visibility
            options["unacked_restore_interval"] = max(1, min(RESTORE_EVERY_SECONDS, visibility // 4))
        return options
    queue = data_dir(base_dir, env) / "celery" / "queue"
    return {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(data_dir(base_dir, env) / "celery" / "processed"),
        "store_processed": False,
        # Broadcast (control) exchanges; kombu's default is a "control" folder in the working directory.
        "control_folder": str(data_dir(base_dir, env) / "celery" / "control"),
    }


def celery_result_backend(env: Mapping[str, str], *, base_dir: Path) -> str:
    """Return the result backend: Redis if REDIS_URL is set, else files under .data/celery/results."""
    url = env.get("REDIS_URL", "").strip()
    if url:
        return url
    return "file://" + str(data_dir(base_dir, env) / "celery" / "results")


def local_folders(env: Mapping[str, str], *, base_dir: Path) -> list[Path]:
    """Return the folders the embedded services write to, so they can be created up front."""
    folders = [data_dir(base_dir, env)]
    if celery_broker(env) == "filesystem://":
        options = celery_broker_transport_options(env, base_dir=base_dir)
        folders += [Path(options[key]) for key in ("data_folder_in", "processed_folder", "control_folder")]
        folders.append(data_dir(base_dir, env) / "celery" / "results")
    return folders


def daily_at(value: str, name: str) -> Any:
    """Return a Celery schedule for every day at ``value`` ("HH:MM", UTC); a bad value stops the start."""
    from celery.schedules import crontab

    hour, _, minute = value.strip().partition(":")
    if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
        raise ImproperlyConfigured(f"{name} must be a time of day as HH:MM (UTC), not {value!r}")
    return crontab(hour=int(hour), minute=int(minute))


def env_days(env: Mapping[str, str], name: str) -> int | None:
    """Return a whole number of days (at least 1) from the environment, or None when unset."""
    value = env.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ImproperlyConfigured(
            f"{name} must be a whole number of days, at least 1 (or unset), not {value!r}"
        )
    return int(value)
