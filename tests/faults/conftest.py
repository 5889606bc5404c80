"""Fixtures for fault-injection tests: a private stack of real processes per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .stack import Stack, missing_tools, start_stack


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """Start private PostgreSQL and Redis with a migrated database and an API user; stop all after."""
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    # Logs stay in pytest's temporary folder for reading after a failure; data folders go with the stack.
    running = start_stack(tmp_path)
    try:
        yield running
    finally:
        running.close()
