"""A scripted provider server on loopback and configs pointing at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.llm import ProviderConfig
from providers.llm.testserver import ProviderServer

APIS = ("openai-completions", "anthropic-messages")


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def make_config(server: ProviderServer, api: str) -> ProviderConfig:
    if api == "openai-completions":
        return ProviderConfig(
            api="openai-completions",
            provider="openai",
            base_url=f"{server.url}/v1",
            model_id="gpt-test",
            api_key="sk-test-secret",
            context_window=128000,
            max_output_tokens=16384,
        )
    return ProviderConfig(
        api="anthropic-messages",
        provider="anthropic",
        base_url=server.url,
        model_id="claude-test",
        api_key="sk-ant-test-secret",
        context_window=200000,
        max_output_tokens=32000,
    )


@pytest.fixture(params=APIS)
def config(request: pytest.FixtureRequest, server: ProviderServer) -> ProviderConfig:
    return make_config(server, request.param)


@pytest.fixture
def openai_config(server: ProviderServer) -> ProviderConfig:
    return make_config(server, "openai-completions")


@pytest.fixture
def anthropic_config(server: ProviderServer) -> ProviderConfig:
    return make_config(server, "anthropic-messages")


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}
