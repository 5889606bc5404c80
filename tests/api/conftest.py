"""Fixtures for the session API tests."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import services
from tests.factories import session_file, small_tree


@pytest.fixture
def stored(api_client: Any) -> Any:
    """Return a session of the API client's user holding ``small_tree()`` (leaf: a3)."""
    return services.import_jsonl(
        actor=api_client.user, data=session_file(small_tree()), filename="s.jsonl"
    ).session
