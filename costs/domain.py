"""The cost of one assistant message, from Pi's recorded cost or, failing that, from configured prices.

Pure: no Django. A message's cost is fixed when it is stored; since an entry never changes parent, the
cost of the path from the root to an entry (its branch) is fixed then too, and is the path cost of its
nearest assistant ancestor plus its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

__all__ = ["NO_MODEL", "Charge", "Price", "Source", "charge_message", "day_of", "model_name"]

NO_MODEL = "(unknown)"
_TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite")


class Source(StrEnum):
    """Where a message's cost comes from."""

    RECORDED = "recorded"  # usage.cost.total as Pi (or a piweb run) wrote it
    PRICED = "priced"  # tokens times the per-model prices configured in the admin
    UNPRICED = "unpriced"  # neither: counted as 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """Dollars per million tokens, as the admin's LLM provider records hold them."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def is_set(self) -> bool:
        return any((self.input, self.output, self.cache_read, self.cache_write))


@dataclass(frozen=True, slots=True, kw_only=True)
class Charge:
    """What one assistant message used and cost."""

    model: str
    input: int
    output: int
    cache_read: int
    cache_write: int
    cost: float
    source: Source

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


def model_name(provider: Any, model: Any) -> str:
    """Return "provider/model" as the usage tables name a model."""
    provider, model = str(provider or ""), str(model or "")
    if not model:
        return NO_MODEL
    return f"{provider}/{model}" if provider else model


def charge_message(message: Mapping[str, Any], prices: Mapping[str, Price]) -> Charge:
    """Return an assistant message's tokens and cost.

    A positive recorded ``usage.cost.total`` wins. Otherwise (no cost, or the 0 Pi writes for a model it
    has no price for) the tokens are priced with the message model's configured price, if any.
    """
    usage = message.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    counts = [_count(usage.get(name)) for name in _TOKEN_FIELDS]
    model = model_name(message.get("provider"), message.get("model"))
    recorded = usage.get("cost")
    total = _amount(recorded.get("total")) if isinstance(recorded, Mapping) else None
    if total is not None and total > 0:
        return Charge(model=model, input=counts[0], output=counts[1], cache_read=counts[2],
                      cache_write=counts[3], cost=total, source=Source.RECORDED)  # fmt: skip
    price = prices.get(model)
    if price is not None and price.is_set:
        rates = (price.input, price.output, price.cache_read, price.cache_write)
        cost = sum(rate / 1_000_000 * count for rate, count in zip(rates, counts, strict=True))
        source = Source.PRICED
    else:
        cost, source = 0.0, Source.UNPRICED
    return Charge(model=model, input=counts[0], output=counts[1], cache_read=counts[2],
                  cache_write=counts[3], cost=cost, source=source)  # fmt: skip


def day_of(timestamp: Any) -> str | None:
    """Return the UTC day (YYYY-MM-DD) of an ISO timestamp or a millisecond epoch, else None."""
    if isinstance(timestamp, int | float) and not isinstance(timestamp, bool):
        try:
            return datetime.fromtimestamp(timestamp / 1000, UTC).date().isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(timestamp, str) and len(timestamp) >= 10:
        day = timestamp[:10]
        if day[4] == "-" and day[7] == "-" and day[:4].isdigit() and day[5:7].isdigit() and day[8:].isdigit():
            return day
    return None


def _count(value: Any) -> int:
    """Return a token counter; anything that is not a finite, non-negative number counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if value != value or value < 0 or value > 1e15:
        return 0
    return int(value)


def _amount(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value or abs(value) > 1e12:
        return None
    return float(value)
