"""Fixtures for compaction operations: small keep-recent budgets and captured live events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from core.realtime import group_name
from providers.llm.testserver import ProviderServer
from tests.factories import conversation, store


@pytest.fixture(autouse=True)
def _small_keep_budget(settings: Any) -> None:
    """Keep only a few hundred recent tokens, so short test sessions have something to compact."""
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 300}
    settings.PIWEB_SUMMARIZER = None


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user()


@pytest.fixture
def compactable(owner: Any) -> Any:
    """Return a session of eight turns whose leaf is ``a8``."""
    return store(owner, conversation(8))


@pytest.fixture
def provider_server() -> Iterator[ProviderServer]:
    with ProviderServer() as server:
        yield server


@pytest.fixture
def events(settings: Any) -> Callable[[Any], list[dict[str, Any]]]:
    """Return ``listen(session)``; calling the returned function drains the events sent to that session."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    def listen(session: Any) -> Callable[[], list[dict[str, Any]]]:
        layer = get_channel_layer()
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)(group_name(session.pk), channel)

        async def drain() -> list[dict[str, Any]]:
            out = []
            while True:
                try:
                    out.append(await asyncio.wait_for(layer.receive(channel), 0.05))
                except TimeoutError:
                    return out

        return lambda: async_to_sync(drain)()

    return listen  # type: ignore[return-value]
