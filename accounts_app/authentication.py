"""API token authentication: knox's hashed tokens, under ``Bearer`` or the older ``Token`` prefix.

A verified token is remembered in process memory for a minute (never past its expiry), so a busy client
costs no token query and no unpickling, only one SHA-512 and one tiny Redis read. What keeps that memory
honest is a *token epoch*: a random value in the cache every web process shares (Redis), read on every
request and replaced whenever a token is deleted (revoke, expiry clean-up, the user's deletion) or a user
is saved (deactivation, a new password). A remembered lookup counts only under the epoch it was made in,
and the epoch is replaced again after the deleting transaction commits, so once a revoke has answered,
every process refuses the token. When the shared cache cannot be reached, every request looks its token
up in the database (and a deletion fails rather than go unheard).

Kept apart from the views: DRF imports authentication classes while its own views module loads.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db import transaction
from django.db.models.base import Model, ModelState
from django.utils import timezone
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

__all__ = ["ApiTokenAuthentication", "forget_all_tokens", "remembered_tokens"]

CACHE_SECONDS = 60.0
# Past this many remembered tokens a process starts afresh rather than grow without bound.
MAX_REMEMBERED = 10_000
EPOCH_KEY = "apitoken:epoch"

PREFIXES = (b"bearer", b"token")
# Tokens this server issues are hex (knox: 64 characters; tokens from before hashing: 40).
TOKEN_SHAPE = re.compile(rb"[0-9a-f]{40,128}")


@dataclass(frozen=True, slots=True)
class Remembered:
    epoch: str
    until: float  # time.monotonic() past which the lookup is made again
    user: Any
    token: Any


class TokenMemory:
    """One process's remembered token lookups, by digest (a second instance stands for another process)."""

    def __init__(self) -> None:
        self._entries: dict[str, Remembered] = {}
        self._lock = threading.Lock()

    def get(self, digest: str, epoch: str | None) -> tuple[Any, Any] | None:
        if epoch is None:
            return None
        hit = self._entries.get(digest)
        if hit is None or hit.epoch != epoch or hit.until <= time.monotonic():
            return None
        expiry = hit.token.expiry
        if expiry is not None and expiry <= timezone.now():
            return None
        # Copies: a request may change its user object; other threads hold the same remembered one.
        return _fresh(hit.user), _fresh(hit.token)

    def put(self, digest: str, epoch: str | None, user: Any, token: Any) -> None:
        if epoch is None:
            return
        seconds = CACHE_SECONDS
        if token.expiry is not None:
            seconds = min(seconds, (token.expiry - timezone.now()).total_seconds())
        if seconds <= 0:
            return
        with self._lock:
            if len(self._entries) >= MAX_REMEMBERED:
                self._entries.clear()
            self._entries[digest] = Remembered(epoch, time.monotonic() + seconds, _fresh(user), _fresh(token))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _fresh(obj: Model) -> Any:
    """Return a copy of a model instance with its own values and state (``copy.copy`` costs 5x more)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    state = object.__new__(ModelState)
    state.__dict__.update(obj._state.__dict__)
    state.__dict__.pop("peers", None)
    # Its own dict: ModelState.__del__ clears its fields_cache, which must not empty the original's.
    state.fields_cache = dict(obj._state.fields_cache)
    new._state = state
    return new


remembered_tokens = TokenMemory()
logger = logging.getLogger(__name__)


class _HeldRedis:
    """A few connections of this process to the shared cache's Redis, for the epoch's one command.

    The cache's own ``get`` builds a client per call, takes a connection from a pool and unpickles;
    the epoch is read on every request, so it goes straight over a connection kept for it. Kept per
    process, not per thread: under ASGI every request runs on a thread of its own, so a connection per
    thread was a new TCP connection per request.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.where: tuple[Any, ...] = ()
        self.idle: list[Any] = []

    @staticmethod
    def _where(cache: RedisCache) -> tuple[Any, ...]:
        # Django hands each thread a cache object of its own: the servers and this process say which.
        return (os.getpid(), *cache._servers)  # type: ignore[attr-defined]  # Django keeps the list private

    def _take(self, cache: RedisCache) -> Any:
        where = self._where(cache)
        with self.lock:
            if self.where != where:
                # Another Redis (tests) or a forked child: the parent's sockets are not this process's.
                self.where, self.idle = where, []
            if self.idle:
                return self.idle.pop()
        # The primary, also for reads: a lagging replica would hand out an epoch already replaced.
        pool = cache._cache._get_connection_pool(write=True)  # type: ignore[attr-defined]  # private, as above
        return pool.connection_class(**pool.connection_kwargs)

    def _give_back(self, cache: RedisCache, connection: Any) -> None:
        with self.lock:
            if self.where == self._where(cache) and len(self.idle) < 16:
                self.idle.append(connection)
                return
        connection.disconnect()

    def command(self, cache: RedisCache, *args: Any) -> Any:
        connection = self._take(cache)
        try:
            try:
                connection.send_command(*args)
                answer = connection.read_response()
            except (redis.ConnectionError, redis.TimeoutError):
                # Once more on a new connection: Redis may have restarted since this one was opened.
                connection.disconnect()
                connection.send_command(*args)
                answer = connection.read_response()
        except BaseException:
            connection.disconnect()  # never hand out a connection with an answer still unread
            raise
        self._give_back(cache, connection)
        return answer


_held = _HeldRedis()


def current_epoch() -> str | None:
    """Return the shared token epoch, starting one when there is none (a fresh or flushed cache).

    None when the shared cache cannot be reached: every lookup then goes to the database.
    """
    cache = caches["shared"]
    try:
        if isinstance(cache, RedisCache):
            key = cache.make_key(EPOCH_KEY)
            value = _held.command(cache, "GET", key)
            if value is None:
                _held.command(cache, "SET", key, secrets.token_hex(8), "NX")
                value = _held.command(cache, "GET", key)
            return value.decode() if isinstance(value, bytes) else None
        epoch = cache.get(EPOCH_KEY)
        if epoch is None:
            cache.add(EPOCH_KEY, secrets.token_hex(8), None)
            epoch = cache.get(EPOCH_KEY)
        return None if epoch is None else str(epoch)
    except (OSError, redis.RedisError):  # unreachable: queries instead, never a wrong answer
        logger.warning("API token epoch unavailable; looking tokens up in the database", exc_info=True)
        # What was revoked meanwhile is unknown here: nothing remembered counts once it is back.
        remembered_tokens.clear()
        return None


def _new_epoch() -> None:
    cache = caches["shared"]
    # A random value rather than a counter: a flushed cache can never bring back an old epoch.
    if isinstance(cache, RedisCache):
        _held.command(cache, "SET", cache.make_key(EPOCH_KEY), secrets.token_hex(8))
    else:
        cache.set(EPOCH_KEY, secrets.token_hex(8), None)


def forget_all_tokens() -> None:
    """Make every process look every token up again, now and once the current transaction commits.

    Now, so that a deletion the shared cache cannot hear of fails (and rolls back) rather than leave
    processes trusting the token; after the commit, because a lookup made in between still saw the row.
    """
    _new_epoch()
    transaction.on_commit(_new_epoch, robust=True)


class ApiTokenAuthentication(TokenAuthentication):
    """Knox's hashed-token check, under either prefix; a malformed token never reaches the database."""

    memory = remembered_tokens

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in PREFIXES:
            return None
        if len(parts) != 2 or not TOKEN_SHAPE.fullmatch(parts[1]):
            raise AuthenticationFailed("Invalid token header: expected 'Bearer <token>'.")
        return self.authenticate_credentials(parts[1])

    def authenticate_credentials(self, token: bytes) -> tuple[Any, Any]:
        digest = hash_token(token.decode("ascii"))
        # Read before the database: a revoke committing meanwhile replaces this epoch, not the next one.
        epoch = current_epoch()
        hit = self.memory.get(digest, epoch)
        if hit is not None:
            return hit
        user, auth_token = super().authenticate_credentials(token)
        self.memory.put(digest, epoch, user, auth_token)
        return user, auth_token
