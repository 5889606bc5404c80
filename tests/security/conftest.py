"""The security suite's stack: real daphne and uvicorn processes on the test database and a private Redis.

The servers start once for the whole package. Data is written straight to the test database (committed:
the servers read it), and the package leaves the database empty when it ends. Every case talks to the
servers over real sockets: HTTP clients, raw TCP for lying requests, and websocket clients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from django.core.management import call_command
from django.test import Client, override_settings

from tests.authz.conftest import World, build_world
from tests.faults.stack import VENV_BIN, PrivateRedis, Service, missing_tools
from tests.live.servers import server_env
from tests.procs import free_port

BODY_TIMEOUT = 1.5  # PIWEB_BODY_TIMEOUT of the servers under test, seconds
SERVERS = ("daphne", "uvicorn")
SIGNIN_RATE = 2  # failed sign-ins per minute per client on the servers under test


class Server:
    """One ASGI server process serving ``piweb.asgi:application`` on a free loopback port."""

    def __init__(self, kind: str, env: dict[str, str], log_dir: Path) -> None:
        self.kind = kind
        self.port = free_port()
        if kind == "daphne":
            command = [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.port)]
        else:
            command = [str(VENV_BIN / "uvicorn"), "--host", "127.0.0.1", "--port", str(self.port)]
        command.append("piweb.asgi:application")
        self.service = Service(kind, command, env, log_dir / f"{kind}.log", self.healthy)

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


@dataclass
class Current:
    """The world the cases share until one of them changes it, and each user's credentials."""

    world: World
    generation: int
    cookies: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)


@dataclass
class Stack:
    servers: dict[str, Server]
    redis_url: str
    blocker: Any
    generation: int = 0  # worlds built so far
    _current: Current | None = None
    _clients: dict[str, httpx.Client] = field(default_factory=dict)

    @property
    def web(self) -> Server:
        return self.servers["daphne"]

    @contextlib.contextmanager
    def db(self) -> Iterator[None]:
        """Write to the test database from a test that is not a database test (committed at once)."""
        with self.blocker.unblock(), override_settings(**_TEST_PROCESS_SETTINGS):
            yield

    def reset(self) -> None:
        """Empty the database and the servers' throttle counts."""
        with self.db():
            # What a world holds, deleted with its cascades (a flush would take a second each time).
            from django.contrib.auth import get_user_model
            from django.contrib.sessions.models import Session

            from providers.models import LLMProvider
            from sessions_app.models import ChatSession
            from teams.models import Team

            ChatSession.objects.all().delete()
            get_user_model().objects.all().delete()
            Team.objects.all().delete()
            LLMProvider.objects.all().delete()
            Session.objects.all().delete()
        self.forget_throttles()

    def forget_throttles(self) -> None:
        client = redis.Redis.from_url(self.redis_url)
        keys = [k for k in client.scan_iter("*signin-failures*")] + list(client.scan_iter("*throttle*"))
        if keys:
            client.delete(*keys)

    def world(self) -> World:
        """A fresh shared session, team, link, operation and run (``tests/authz``'s world)."""
        self.reset()
        self.generation += 1
        with self.db():
            return build_world(_make_user)

    def current(self) -> Current:
        """Return the shared world, built again after a case changed it (or another module rebuilt)."""
        if self._current is None or self._current.generation != self.generation:
            world = self.world()
            state = Current(world, self.generation)
            for actor in ("owner", "editor", "viewer", "other"):
                account = world.user_of(actor)
                state.cookies[actor] = cookie_for(self, account)
                state.tokens[actor] = token_for(self, account)
            self._current = state
        return self._current

    def changed(self) -> None:
        self._current = None

    @contextlib.contextmanager
    def http(self, server: str = "daphne", **kwargs: Any) -> Iterator[httpx.Client]:
        """An HTTP client for one server, its connection kept between cases; no cookie carries over."""
        if kwargs:
            with httpx.Client(base_url=self.servers[server].base_url, timeout=10, **kwargs) as client:
                yield client
            return
        client = self._clients.get(server)
        if client is None:
            client = self._clients[server] = httpx.Client(base_url=self.servers[server].base_url, timeout=10)
        client.cookies.clear()
        try:
            yield client
        finally:
            client.cookies.clear()


# The test process publishes on an in-memory layer: the servers' sockets listen on their own Redis.
_TEST_PROCESS_SETTINGS = {
    "CHANNEL_LAYERS": {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
    "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
}


def _make_user(username: str | None = None, *, password: str = "pw-for-tests", **fields: Any) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=username, password=password, **fields)


def cookie_for(stack: Stack, user: Any) -> str:
    """A ``Cookie`` header value that signs ``user`` in (the session row is committed)."""
    with stack.db():
        client = Client()
        client.force_login(user)
        return f"sessionid={client.cookies['sessionid'].value}"


def token_for(stack: Stack, user: Any) -> str:
    from sessions_app.models import ApiToken

    with stack.db():
        return str(ApiToken.objects.create(user=user)[1])


@pytest.fixture(scope="package")
def stack(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    logs = tmp_path_factory.mktemp("security")
    private_redis = PrivateRedis(logs)
    private_redis.service.start()
    started: list[Service] = [private_redis.service]
    try:
        with django_db_blocker.unblock():
            env = server_env(
                private_redis.url,
                PIWEB_BODY_TIMEOUT=str(BODY_TIMEOUT),
                PIWEB_LOGIN_RATE_PER_CLIENT=f"{SIGNIN_RATE}/min",
            )
        servers = {kind: Server(kind, env, logs) for kind in SERVERS}
        for server in servers.values():
            server.service.start()
            started.append(server.service)
        built = Stack(servers, private_redis.url, django_db_blocker)
        yield built
        for client in built._clients.values():
            client.close()
        with built.db():
            call_command("flush", interactive=False, verbosity=0)
    finally:
        for service in reversed(started):
            service.stop()
