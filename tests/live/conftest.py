"""Fixtures for tests against real ASGI server processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessions_app import services
from tests.factories import session_file, small_tree
from tests.faults.stack import missing_tools


@pytest.fixture(autouse=True)
def _tools(transactional_db: None, settings: Any) -> None:
    """Servers read what the test wrote, so every test here commits for real.

    The servers publish on a Redis of their own; what this process publishes stays in it, so these
    tests never reach sockets of tests running at the same time on the shared Redis.
    """
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(
        actor=owner, data=session_file(small_tree(rich=True)), filename="s.jsonl"
    ).session


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path
