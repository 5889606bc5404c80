"""A scripted provider on loopback, a configured model pointing at it, and a listener on the session group."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from core import realtime
from piweb.celery import app as celery_app
from providers.llm.testserver import ProviderServer
from providers.models import LLMProvider
from sessions_app.models import ChatSession


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture
def make_provider(server: ProviderServer, db: None) -> Callable[..., LLMProvider]:
    def make(
        *, context_window: int = 200000, max_output_tokens: int = 32000, name: str = "claude"
    ) -> LLMProvider:
        return LLMProvider.objects.create(
            name=name,
            api="anthropic-messages",
            base_url=server.url,
            model_id="claude-test",
            provider="anthropic",
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            api_key="sk-ant-test",
        )

    return make


@pytest.fixture(autouse=True)
def _agent_settings(settings: Any) -> Iterator[None]:
    """Run tasks in-process, keep retry waits short, and give events an in-process layer with room."""
    settings.PIWEB_AGENT_RETRY = {"enabled": True, "maxRetries": 3, "baseDelayMs": 1}
    settings.PIWEB_SUMMARIZER = None
    # Most scripts answer only the run's turns; the tests of run-model summaries turn this back on.
    settings.PIWEB_RUN_SUMMARIZER = "default"
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 10000}}
    }
    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates


class Listener:
    """A viewer of one session: joins its group and collects every event."""

    def __init__(self, session_id: int) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        async_to_sync(self.layer.group_add)(realtime.group_name(session_id), self.channel)
        self.received: list[dict[str, Any]] = []

    def events(self) -> list[dict[str, Any]]:
        async def drain() -> list[dict[str, Any]]:
            out = []
            while True:
                try:
                    out.append(await asyncio.wait_for(self.layer.receive(self.channel), 0.05))
                except TimeoutError:
                    return out

        self.received += async_to_sync(drain)()
        return self.received

    def names(self, *, deltas: bool = False) -> list[str]:
        return [e["event"] for e in self.events() if deltas or e["event"] != "run_delta"]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["event"] == name]


@pytest.fixture
def listen() -> Callable[[ChatSession], Listener]:
    return Listener
