"""Fixtures shared by the whole suite."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

# The sync client is a package of its own (clients/piweb-sync): test this checkout's copy, whichever
# checkout the shared virtualenv's editable install points at.
CLIENT_SRC = Path(__file__).resolve().parents[1] / "clients" / "piweb-sync" / "src"
sys.path.insert(0, str(CLIENT_SRC))


@pytest.fixture
def user(django_user_model: Any, db: None) -> Callable[..., Any]:
    """Return a factory that creates users: ``user()``, ``user("alice")``, ``user(is_staff=True)``."""
    counter = iter(range(1, 1_000_000))

    def make(username: str | None = None, *, password: str = "pw-for-tests", **fields: Any) -> Any:
        name = username or f"user{next(counter)}"
        return django_user_model.objects.create_user(username=name, password=password, **fields)

    return make


@pytest.fixture
def api_client(user: Callable[..., Any]) -> APIClient:
    """Return an API client logged in as a fresh user (available as ``api_client.user``)."""
    client = APIClient()
    account = user()
    client.force_authenticate(user=account)
    client.user = account  # type: ignore[attr-defined]
    return client


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """Hash test passwords cheaply; the default hasher spends a quarter second per user on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _private_cache(settings: Any) -> Any:
    """Give each test an empty cache of its own, so throttle counts never leak between tests or runs."""
    from django.core.cache import caches

    local = "django.core.cache.backends.locmem.LocMemCache"
    settings.CACHES = {"default": {"BACKEND": local}, "shared": {"BACKEND": local, "LOCATION": "shared"}}
    for alias in settings.CACHES:
        caches[alias].clear()
    yield
    for alias in settings.CACHES:
        caches[alias].clear()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Keep the test process's own connections unpooled; the servers the tests start keep the pool.

    Tests run threads (concurrent writers, a run's worker) whose connections Django closes only when the
    thread ends; with a pool each would hold one of its few slots for the rest of the run, and later tests
    would wait for a connection until the pool's timeout. ``tests/test_db_backend.py`` and the connection
    budget test check pooling in their own processes.
    """
    from django.conf import settings

    for alias in settings.DATABASES.values():
        alias.get("OPTIONS", {}).pop("pool", None)


# Cheap reset after transactional tests: Django's flush TRUNCATEs every table and then re-creates the
# content types and permissions it just emptied; deleting rows from the tables that have any is the same
# end state for a fraction of the time. Foreign keys are deferred on PostgreSQL, so order does not matter.
_KEPT_TABLES = {"django_content_type", "auth_permission", "django_migrations"}


def _empty_tables(self: Any) -> None:
    from django.db import connections, transaction

    for alias in self._databases_names(include_mirrors=False):
        connection = connections[alias]
        if connection.vendor != "postgresql" or self.serialized_rollback or self.reset_sequences:
            _flush(self)
            return
        tables = [
            t
            for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
            if t not in _KEPT_TABLES
        ]
        quoted = connection.ops.quote_name
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            cursor.execute(";".join(f"DELETE FROM {quoted(t)}" for t in tables))


from django.test import TransactionTestCase  # noqa: E402

_flush = TransactionTestCase._fixture_teardown
TransactionTestCase._fixture_teardown = _empty_tables  # type: ignore[method-assign]
