"""A message's cost: Pi's recorded cost wins; configured prices fill in where there is none."""

from __future__ import annotations

import pytest

from costs.domain import Price, Source, charge_message, day_of


def _message(usage: object, model: str = "m") -> dict:
    return {"role": "assistant", "provider": "p", "model": model, "usage": usage}


PRICES = {"p/m": Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)}


def test_the_recorded_cost_wins_over_a_configured_price() -> None:
    usage = {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.5}}
    charge = charge_message(_message(usage), PRICES)
    assert (charge.cost, charge.source, charge.tokens, charge.model) == (0.5, Source.RECORDED, 1100, "p/m")


@pytest.mark.parametrize("cost", [None, {}, {"total": 0}, {"total": "1.5"}, {"total": float("nan")}])
def test_without_a_recorded_cost_the_tokens_are_priced(cost: object) -> None:
    usage = {"input": 1_000_000, "output": 200_000, "cacheRead": 100_000, "cacheWrite": 10_000}
    if cost is not None:
        usage["cost"] = cost
    charge = charge_message(_message(usage), PRICES)
    assert charge.source == Source.PRICED
    assert charge.cost == pytest.approx(3.0 + 3.0 + 0.03 + 0.0375)


def test_a_model_without_price_or_recorded_cost_is_unpriced_and_free() -> None:
    charge = charge_message(_message({"input": 500, "output": 5}, model="other"), PRICES)
    assert (charge.cost, charge.source, charge.tokens) == (0.0, Source.UNPRICED, 505)


@pytest.mark.parametrize("usage", [None, "lots", {"input": -5, "output": True, "cacheRead": "9"}])
def test_bad_usage_counts_as_nothing(usage: object) -> None:
    charge = charge_message(_message(usage), {})
    assert (charge.tokens, charge.cost) == (0, 0.0)


def test_days_come_from_iso_stamps_and_millisecond_epochs() -> None:
    assert day_of("2026-03-04T23:59:59.000Z") == "2026-03-04"
    assert day_of(1_767_225_600_000) == "2026-01-01"
    assert day_of("yesterday") is None and day_of(None) is None
