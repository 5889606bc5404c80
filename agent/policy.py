"""Decisions of an agent run, as pure functions over plain data (PI-FACTS §5.3–5.5).

When to compact, when a failed turn is recovered by omitting it and compacting, when the recovery fuse
has blown, and when a transient failure is retried. Nothing here touches the database or the network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from compaction_app.facade import (
    CompactionSettings,
    is_context_overflow,
    is_recoverable_length,
    is_transient_error,
    should_compact,
)
from pitree.entries import Entry
from pitree.projection import Projection
from pitree.timestamps import js_date_ms
from pitree.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
)

__all__ = [
    "LENGTH_RECOVERY_FAILED",
    "OVERFLOW_RECOVERY_FAILED",
    "Action",
    "Decision",
    "ModelSpec",
    "RetrySettings",
    "check_compaction",
    "exceeds_threshold",
    "fuse_after_message_end",
    "is_retryable_error",
    "latest_compaction",
    "model_for_message",
    "recovery_targets",
]

OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
LENGTH_RECOVERY_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."

Reason = Literal["threshold", "overflow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrySettings:
    """Automatic retry of transient provider failures; delays double from ``base_delay_ms``."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000

    def delay_ms(self, attempt: int) -> int:
        """Return the wait before retry number ``attempt`` (1-based)."""
        return self.base_delay_ms * 2 ** (attempt - 1)

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None) -> RetrySettings:
        """Read Pi's ``retry`` settings block; missing keys keep their defaults."""
        config = config or {}
        return cls(
            enabled=bool(config.get("enabled", True)),
            max_retries=int(config.get("maxRetries", 3)),
            base_delay_ms=int(config.get("baseDelayMs", 2000)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """The model a run talks to, as far as the decisions need it."""

    provider: str
    model_id: str
    context_window: int
    max_output_tokens: int


class Action(StrEnum):
    NONE = "none"
    COMPACT = "compact"  # compact with ``reason``; continue the run only if ``will_retry``
    RECOVER = "recover"  # set the fuse, omit the failed attempt, compact for overflow, then continue
    FUSE_BLOWN = "fuse_blown"  # a second overflow in one window: stop with ``error_message``


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    action: Action
    reason: Reason | None = None
    will_retry: bool = False
    kind: Literal["overflow", "length"] | None = None
    error_message: str | None = None


NOTHING = Decision(action=Action.NONE)


def fuse_after_message_end(fuse: bool, message: Mapping[str, Any]) -> bool:
    """Return the recovery fuse after an assistant message ends: a clean stop (even aborted) resets it."""
    if message.get("role") != "assistant":
        return fuse
    return fuse if message.get("stopReason") in ("error", "length") else False


def model_for_message(message: Mapping[str, Any], current: ModelSpec | None) -> ModelSpec | None:
    """Return the current model when it produced ``message``, else None."""
    if current is None:
        return None
    if message.get("provider") == current.provider and message.get("model") == current.model_id:
        return current
    return None


def latest_compaction(path: Sequence[Entry]) -> Entry | None:
    """Return the last compaction on the branch."""
    for entry in reversed(path):
        if entry.type == "compaction":
            return entry
    return None


def _ms(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    return math.nan


def _is_stale(message: Mapping[str, Any], compaction: Entry | None) -> bool:
    # NaN on either side compares false, as in JavaScript, so a message without a timestamp is fresh.
    if compaction is None:
        return False
    return _ms(message.get("timestamp")) <= js_date_ms(compaction.timestamp)


def _projection_state(
    path: Sequence[Entry], projection: Projection, entry_id: str | None
) -> tuple[bool, bool, bool]:
    """Return (projected, post_edit, retained) for the assistant persisted as ``entry_id``."""
    after: list[Entry] = []
    if entry_id is not None:
        index = next((i for i, e in enumerate(path) if e.id == entry_id), -1)
        after = list(path[index + 1 :]) if index >= 0 else []
    projected = entry_id is None or any(
        pe.entry.id == entry_id and any(m.get("role") == "assistant" for m in pe.messages)
        for pe in projection.entries
    )
    post_edit = any(e.type == "context_edit" for e in after)
    last_edit = next(
        (e for e in reversed(after) if e.type == "context_edit" and e.get("targetId") == entry_id), None
    )
    omitted = (
        last_edit is not None
        and "replacement" in last_edit.payload
        and last_edit.payload["replacement"] is None
    )
    retained = entry_id is None or (not any(e.type == "compaction" for e in after) and not omitted)
    return projected, post_edit, retained


def check_compaction(
    message: Mapping[str, Any],
    *,
    current_model: ModelSpec | None,
    settings: CompactionSettings,
    path: Sequence[Entry],
    projection: Projection,
    message_entry_id: str | None,
    recovery_attempted: bool,
    skip_aborted_check: bool = True,
) -> Decision:
    """Decide what follows an assistant message: nothing, a compaction, a recovery or a blown fuse.

    ``path`` is the current branch (at least from the newest compaction's kept range on) and
    ``projection`` its projection; ``message_entry_id`` is the entry that persisted ``message``.
    """
    if not settings.enabled:
        return NOTHING
    if skip_aborted_check and message.get("stopReason") == "aborted":
        return NOTHING
    message_model = model_for_message(message, current_model)
    same_model = message_model is not None
    model = message_model or current_model
    context_window = model.context_window if model is not None else 0
    compaction = latest_compaction(path)
    if _is_stale(message, compaction):
        return NOTHING

    projected, post_edit, retained = _projection_state(path, projection, message_entry_id)
    explicit = message.get("stopReason") == "error" and is_context_overflow(message)
    overflow = same_model and (
        (explicit and retained)
        or (projected and not post_edit and is_context_overflow(message, context_window))
    )
    max_output = message_model.max_output_tokens if message_model is not None else 0
    length = same_model and projected and is_recoverable_length(message, max_output)
    if overflow or length:
        will_retry = message.get("stopReason") != "stop"
        if not will_retry:
            # A complete answer that reported more input than the window holds: compact, never replay it.
            return Decision(action=Action.COMPACT, reason="overflow", will_retry=False, kind="overflow")
        kind: Literal["overflow", "length"] = "overflow" if overflow else "length"
        if recovery_attempted:
            text = OVERFLOW_RECOVERY_FAILED if overflow else LENGTH_RECOVERY_FAILED
            return Decision(action=Action.FUSE_BLOWN, reason="overflow", kind=kind, error_message=text)
        return Decision(action=Action.RECOVER, reason="overflow", will_retry=True, kind=kind)

    tokens = _threshold_tokens(message, path, projection, compaction)
    if tokens is None or not should_compact(tokens, context_window, settings):
        return NOTHING
    return Decision(action=Action.COMPACT, reason="threshold", will_retry=False)


def _threshold_tokens(
    message: Mapping[str, Any], path: Sequence[Entry], projection: Projection, compaction: Entry | None
) -> float | None:
    """Return the tokens the threshold is checked against, or None when the only usage is stale."""
    if any(pe.entry.type == "context_edit" for pe in projection.entries):
        return estimate_projected_context_tokens(projection, path).tokens
    usage = message.get("usage")
    direct = calculate_context_tokens(usage) if isinstance(usage, Mapping) else 0
    if message.get("stopReason") != "error" and direct != 0:
        return direct
    estimate = estimate_context_tokens(projection.messages)
    if estimate.last_usage_index is not None and compaction is not None:
        anchor = projection.messages[estimate.last_usage_index]
        if anchor.get("role") == "assistant" and _ms(anchor.get("timestamp")) <= js_date_ms(
            compaction.timestamp
        ):
            return None
    return estimate.tokens


def exceeds_threshold(
    projection: Projection, path: Sequence[Entry], model: ModelSpec | None, settings: CompactionSettings
) -> bool:
    """Return whether the context about to be sent is over the compaction threshold (between turns)."""
    if model is None or model.context_window <= 0:
        return False
    tokens = estimate_projected_context_tokens(projection, path).tokens
    return should_compact(tokens, model.context_window, settings)


def is_retryable_error(message: Mapping[str, Any], context_window: int) -> bool:
    """Return whether a failed turn is worth repeating as is: transient, and never an overflow."""
    if is_context_overflow(message, context_window or 0):
        return False
    return is_transient_error(message)


def recovery_targets(path: Sequence[Entry], entry_id: str) -> list[str]:
    """Return the failed assistant's entry id and the ids of the tool results that answer its calls.

    Results are collected from the entries after the assistant, up to the next assistant message.
    """
    index = next((i for i, e in enumerate(path) if e.id == entry_id), -1)
    if index < 0:
        return [entry_id]
    message = path[index].message if isinstance(path[index].message, Mapping) else {}
    found = message.get("content")
    content: list[Any] = found if isinstance(found, list) else []
    call_ids = {b.get("id") for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"}
    targets = [entry_id]
    for entry in path[index + 1 :]:
        if entry.type != "message":
            continue
        if entry.role == "assistant":
            break
        if (
            entry.role == "toolResult"
            and entry.message.get("toolCallId") in call_ids
            and entry.id is not None
        ):
            targets.append(entry.id)
    return targets
