"""Compaction settings and the compaction threshold."""

from __future__ import annotations

import pytest

from compaction_app.domain.settings import (
    CompactionSettings,
    InvalidSettings,
    resolve_settings,
    should_compact,
)


def test_defaults() -> None:
    assert resolve_settings(None).as_dict() == {
        "enabled": True,
        "reserveTokens": 16384,
        "keepRecentTokens": 20000,
    }


def test_model_override_wins_over_setting() -> None:
    config = {
        "reserveTokens": 1000,
        "keepRecentTokens": 2000,
        "modelOverrides": {"anthropic/claude": {"keepRecentTokens": 500}},
    }
    settings = resolve_settings(config, provider="anthropic", model_id="claude")
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == (1000, 500)
    other = resolve_settings(config, provider="openai", model_id="gpt")
    assert other.keep_recent_tokens == 2000


@pytest.mark.parametrize("value", [-1, 1.5, "10", True, 2**53])
def test_invalid_token_counts_are_refused(value: object) -> None:
    with pytest.raises(InvalidSettings):
        resolve_settings({"reserveTokens": value})


def test_threshold_is_strict() -> None:
    settings = CompactionSettings(reserve_tokens=100)
    assert not should_compact(900, 1000, settings)
    assert should_compact(901, 1000, settings)
    assert not should_compact(10_000, 1000, CompactionSettings(enabled=False))
    assert not should_compact(float("nan"), 1000, settings)
