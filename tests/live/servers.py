"""Real ASGI servers (daphne) on the test database and a private Redis, and a socket client for them.

The servers run as subprocesses against the same PostgreSQL database as the test (so tests using them
commit for real: ``django_db(transaction=True)``) and a redis-server of their own, so nothing another
test publishes on the shared Redis reaches their sockets.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from django.test import Client
from websockets.asyncio.client import ClientConnection, connect

from sessions_app.models import ApiToken
from tests.faults.stack import VENV_BIN, PrivateRedis, Service
from tests.procs import database_url, free_port

__all__ = [
    "AsgiServer",
    "PrivateRedis",
    "cookie_for",
    "open_socket",
    "receive_until",
    "server_env",
    "token_for",
]


def server_env(redis_url: str, **extra: str) -> dict[str, str]:
    """Return a server environment on the test database and the given Redis."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_"))}
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "PIWEB_LOG_LEVEL": "WARNING",
        "DJANGO_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
        # These servers run without Celery workers unless a test starts some and says so.
        "PIWEB_READY_WORKERS": "0",
        **extra,
    }


class AsgiServer:
    """One daphne process serving ``piweb.asgi:application`` on a free loopback port."""

    def __init__(self, env: dict[str, str], log_dir: Path, name: str = "web") -> None:
        self.port = free_port()
        command = [
            str(VENV_BIN / "daphne"),
            "-b",
            "127.0.0.1",
            "-p",
            str(self.port),
            "piweb.asgi:application",
        ]
        self.service = Service(name, command, env, log_dir / f"{name}.log", self.healthy)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def healthy(self) -> bool:
        return httpx.get(self.base_url + "/accounts/login/", timeout=2).status_code == 200

    def log(self) -> str:
        return self.service.log_path.read_text(errors="replace")


@contextmanager
def running(*servers: AsgiServer | PrivateRedis) -> Iterator[None]:
    """Start the services in order and stop them all afterwards."""
    started: list[Service] = []
    try:
        for server in servers:
            server.service.start()
            started.append(server.service)
        yield
    finally:
        for service in reversed(started):
            service.stop()


@contextmanager
def private_piweb(folder: Path, **extra: str) -> Iterator[AsgiServer]:
    """daphne on the test database with a redis-server of its own (``extra``: more of its environment);
    skips the test when the tools are missing."""
    import pytest

    from tests.faults.stack import missing_tools

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    redis = PrivateRedis(folder)
    server = AsgiServer(server_env(redis.url, **extra), folder)
    with running(redis, server):
        yield server


def cookie_for(user: Any) -> str:
    """Return a ``Cookie`` header value logging ``user`` in (the session row is in the shared database)."""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def token_for(user: Any) -> str:
    return ApiToken.objects.create(user=user)[1]


async def open_socket(
    server: AsgiServer,
    pk: int,
    *,
    cookie: str | None = None,
    token: str | None = None,
    link: str | None = None,
) -> ClientConnection:
    """Open the session socket as a page (cookie, same Origin) or a script (token header) would."""
    headers: dict[str, str] = {}
    origin = None
    if cookie is not None:
        headers["Cookie"] = cookie
        origin = server.base_url
    if token is not None:
        headers["Authorization"] = f"Token {token}"
    if link is not None:
        headers["X-Share-Token"] = link
    return await connect(
        f"{server.ws_url}/ws/sessions/{pk}/",
        origin=origin,
        additional_headers=headers,
        open_timeout=10,  # type: ignore[arg-type]
    )


async def receive_until(socket: ClientConnection, seq: int, timeout: float) -> list[dict[str, Any]]:
    """Return the messages received until one carries ``seq`` (or a later one)."""
    messages: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            message = json.loads(await socket.recv())
            messages.append(message)
            if isinstance(message.get("seq"), int) and message["seq"] >= seq:
                return messages
