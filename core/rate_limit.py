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
    """Count one ``scope`` action by ``who``; raise TooFrequent once the rate is used up.

    A sliding window: the last window's count, weighted by how much of it still lies within the rate's
    period, plus this window's. A fixed window alone would let twice the rate through around its edge.
    """
    count, period = parse_rate(rate)
    now = time.time()
    window = int(now // period)
    key = f"rate:{scope}:{who}:{window}"
    earlier = cache.get(f"rate:{scope}:{who}:{window - 1}", 0)
    weight = 1 - (now - window * period) / period
    # add() starts the window at 0 only if no other process did; incr() is atomic in Redis.
    cache.add(key, 0, 2 * period + 1)
    try:
        used = cache.incr(key)
    except ValueError:  # the key expired between add and incr: this is the window's first use
        cache.set(key, 1, 2 * period + 1)
        used = 1
    if used + earlier * weight > count:
        cache.decr(key)  # a refused action does not count: the wait is the same however often one asks
        wait = (
            max(1, int((window + 1) * period - now + 0.999))
            if used > count
            else _until_free(count, period, earlier, used, now - window * period)
        )
        limit = f"at most {count} every {_spoken(period)}"
        raise TooFrequent(f"Too many {what}: {limit}. Try again in {wait} s.", wait)


def _until_free(count: int, period: int, earlier: int, used: int, into: float) -> int:
    """Seconds until the last window's weight has fallen enough for one more action."""
    # used + earlier * (1 - t / period) <= count  ⇔  t >= period * (1 - (count - used) / earlier)
    needed = period * (1 - (count - used) / earlier) if earlier else into
    return max(1, int(needed - into + 0.999))


def _spoken(seconds: int) -> str:
    return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}[seconds]
