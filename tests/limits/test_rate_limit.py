"""The per-person limit on comments: a sliding window in the shared cache, never twice the rate at an edge."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from core import rate_limit
from core.errors import TooFrequent


def _clock(monkeypatch: pytest.MonkeyPatch, start: float) -> list[float]:
    now = [start]
    monkeypatch.setattr(rate_limit.time, "time", lambda: now[0])
    return now


def _taken(who: str, tries: int) -> int:
    done = 0
    for _ in range(tries):
        try:
            rate_limit.take("test", who, "5/min", what="comments")
            done += 1
        except TooFrequent:
            pass
    return done


def test_a_burst_across_a_window_edge_gets_the_rate_not_twice_it(monkeypatch: Any) -> None:
    cache.clear()
    now = _clock(monkeypatch, 6_000_000 * 60 + 59.5)  # half a second before a window ends
    assert _taken("ada", 10) == 5
    now[0] += 1  # half a second into the next window
    assert _taken("ada", 10) == 0
    now[0] += 30  # half the last window has slid out: half its count is free again
    assert _taken("ada", 10) == 2
    now[0] += 60  # those two still weigh half
    assert _taken("ada", 10) == 4
    now[0] += 120
    assert _taken("ada", 10) == 5


def test_a_refusal_says_how_long_to_wait_and_does_not_count(monkeypatch: Any) -> None:
    cache.clear()
    now = _clock(monkeypatch, 7_000_000 * 60 + 10)
    assert _taken("bob", 5) == 5
    with pytest.raises(TooFrequent) as refused:
        rate_limit.take("test", "bob", "5/min", what="comments")
    assert 1 <= refused.value.retry_after <= 60
    assert "at most 5 every minute" in refused.value.message
    # Asking again and again while refused does not push the wait further.
    assert _taken("bob", 20) == 0
    now[0] += refused.value.retry_after + 61
    assert _taken("bob", 1) == 1
    assert _taken("eve", 5) == 5  # others have their own count
