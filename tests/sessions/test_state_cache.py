"""A value missing from the shared cache is built once, however many readers ask for it at the same time."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

import pytest
from django.core.cache import caches

from sessions_app import state_cache


def _ask_together(key: str, build: Any, readers: int = 8) -> tuple[list[Any], list[BaseException]]:
    answers: list[Any] = []
    errors: list[BaseException] = []
    start = threading.Barrier(readers)

    def read() -> None:
        start.wait()
        try:
            answers.append(state_cache.cached(key, build, 60))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return answers, errors


def test_readers_arriving_together_wait_for_one_build() -> None:
    key = f"test-single-flight:{secrets.token_hex(4)}"
    builds: list[int] = []

    def build() -> dict[str, Any]:
        builds.append(1)
        time.sleep(0.3)
        return {"built": True}

    answers, errors = _ask_together(key, build)
    assert errors == [] and answers == [{"built": True}] * 8
    assert len(builds) == 1
    assert caches["shared"].get(f"{key}:building") is None  # no claim left behind


def test_a_failed_build_does_not_keep_the_others_waiting() -> None:
    key = f"test-single-flight:{secrets.token_hex(4)}"

    def build() -> Any:
        time.sleep(0.1)
        raise LookupError("no such entry")

    started = time.monotonic()
    answers, errors = _ask_together(key, build)
    assert answers == [] and len(errors) == 8
    assert all(isinstance(e, LookupError) for e in errors)  # each reader hears why, from its own build
    assert time.monotonic() - started < state_cache.WAIT_SECONDS


def test_a_claim_whose_builder_died_is_waited_for_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state_cache, "WAIT_SECONDS", 0.3)
    key = f"test-single-flight:{secrets.token_hex(4)}"
    caches["shared"].add(f"{key}:building", 1, 30)  # a process killed mid-build left its claim
    started = time.monotonic()
    assert state_cache.cached(key, lambda: "built here", 60) == "built here"
    assert 0.3 <= time.monotonic() - started < 2
    assert state_cache.cached(key, lambda: "not again", 60) == "built here"
