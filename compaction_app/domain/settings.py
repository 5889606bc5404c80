"""Compaction settings: when to compact and how much recent context to keep verbatim.

A session's own override wins over a per-model override, which wins over the ordinary setting, which
wins over the default. Token counts are
non-negative integers; anything else is refused when the settings are read, not when they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "CompactionSettings",
    "InvalidSettings",
    "resolve_settings",
    "should_compact",
    "with_session_override",
]

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
_MAX_SAFE_INTEGER = 2**53 - 1


class InvalidSettings(ValueError):
    """A compaction setting is not a non-negative integer."""


def _check_tokens(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSettings(f"{name} must be a non-negative integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise InvalidSettings(f"{name} must be a non-negative integer, got {value!r}")
    if not 0 <= value <= _MAX_SAFE_INTEGER:
        raise InvalidSettings(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings:
    """Whether automatic compaction runs, the output room to reserve, and the recent tokens to keep."""

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    def __post_init__(self) -> None:
        _check_tokens("reserveTokens", self.reserve_tokens)
        _check_tokens("keepRecentTokens", self.keep_recent_tokens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        }


def resolve_settings(
    config: Mapping[str, Any] | None, *, provider: str | None = None, model_id: str | None = None
) -> CompactionSettings:
    """Return the settings for a model from a ``compaction`` config block with optional ``modelOverrides``."""
    config = config or {}
    override: Mapping[str, Any] = {}
    overrides = config.get("modelOverrides")
    if isinstance(overrides, Mapping) and provider is not None and model_id is not None:
        found = overrides.get(f"{provider}/{model_id}")
        if isinstance(found, Mapping):
            override = found

    def pick(key: str, default: int) -> int:
        for source in (override, config):
            if source.get(key) is not None:
                return _check_tokens(key, source[key])
        return default

    enabled = config.get("enabled", True)
    return CompactionSettings(
        enabled=bool(enabled) if enabled is not None else True,
        reserve_tokens=pick("reserveTokens", DEFAULT_RESERVE_TOKENS),
        keep_recent_tokens=pick("keepRecentTokens", DEFAULT_KEEP_RECENT_TOKENS),
    )


def should_compact(tokens: float, context_window: float, settings: CompactionSettings) -> bool:
    """Return True when the context uses more than the window minus the reserve (strictly more)."""
    return settings.enabled and tokens > context_window - settings.reserve_tokens


def with_session_override(
    settings: CompactionSettings, override: Mapping[str, Any] | None
) -> CompactionSettings:
    """Apply a session's own ``{enabled?, reserveTokens?, keepRecentTokens?}`` on top of ``settings``."""
    if not isinstance(override, Mapping):
        return settings
    enabled = override.get("enabled")
    reserve = override.get("reserveTokens")
    keep = override.get("keepRecentTokens")
    return CompactionSettings(
        enabled=settings.enabled if enabled is None else bool(enabled),
        reserve_tokens=settings.reserve_tokens
        if reserve is None
        else _check_tokens("reserveTokens", reserve),
        keep_recent_tokens=(
            settings.keep_recent_tokens if keep is None else _check_tokens("keepRecentTokens", keep)
        ),
    )
