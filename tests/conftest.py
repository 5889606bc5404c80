"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient


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
    from django.core.cache import cache

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()
    yield
    cache.clear()
