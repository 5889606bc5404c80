"""Per-person limits on writes that reach other people (comments, mentions): a fixed window in the cache.

The count is one atomic increment in the shared cache (Redis in production), so every web process sees
the same count; a refusal says how long to wait. Limits are ``N/unit`` strings (``12/min``).
"""

from __future__ import annotations

import time

from django.core.cache import cache

from core.errors import TooFrequent

__all__ = ["parse_rate", "take"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """Return (count, seconds) of ``N/unit``; raise ValueError naming the bad text."""
    count, _, period = rate.partition("/")
    unit = period.strip()[:1].lower()
    if not count.strip().isdigit() or unit not in _UNITS:
        raise ValueError(f"{rate!r} is not a rate such as 12/min")
    return int(count), _UNITS[unit]


def take(scope: str, who: object, rate: str, *, what: str) -> None:
    """Count one ``scope`` action by ``who``; raise TooFrequent once the rate is used up in this window."""
    count, period = parse_rate(rate)
    now = time.time()
    window = int(now // period)
    key = f"rate:{scope}:{who}:{window}"
    # add() starts the window at 0 only if no other process did; incr() is atomic in Redis.
    cache.add(key, 0, period + 1)
    try:
        used = cache.incr(key)
    except ValueError:  # the key expired between add and incr: this is the window's first use
        cache.set(key, 1, period + 1)
        used = 1
    if used > count:
        wait = max(1, int((window + 1) * period - now + 0.999))
        limit = f"at most {count} every {_spoken(period)}"
        raise TooFrequent(f"Too many {what}: {limit}. Try again in {wait} s.", wait)


def _spoken(seconds: int) -> str:
    return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}[seconds]
