"""The run's decisions as pure functions: compaction gates, the recovery fuse, retries (PI-FACTS §5.3–5.5)."""

from __future__ import annotations

from typing import Any

from agent.policy import (
    LENGTH_RECOVERY_FAILED,
    OVERFLOW_RECOVERY_FAILED,
    Action,
    ModelSpec,
    RetrySettings,
    check_compaction,
    exceeds_threshold,
    fuse_after_message_end,
    is_retryable_error,
    recovery_targets,
)
from compaction_app.domain.settings import CompactionSettings
from pitree.entries import Entry, entry_from_value
from pitree.projection import project

MODEL = ModelSpec(provider="anthropic", model_id="claude", context_window=10000, max_output_tokens=4000)
SETTINGS = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=100)
T0 = 1_785_000_000_000  # 2026-07-25T17:20:00Z in milliseconds


def assistant(
    stop: str = "stop", *, error: str | None = None, ts: int = T0 + 60_000, **usage: int
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "provider": "anthropic",
        "model": "claude",
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, **usage},
        "stopReason": stop,
        "timestamp": ts,
    }
    if error is not None:
        message["errorMessage"] = error
    return message


def path_with(message: dict[str, Any], *extra: dict[str, Any]) -> list[Entry]:
    raw = [
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-07-25T17:20:00.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": T0}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-07-25T17:21:00.000Z",
         "message": message},
        *extra,
    ]  # fmt: skip
    return [entry_from_value(i, e) for i, e in enumerate(raw)]


def decide(message: dict[str, Any], *extra: dict[str, Any], fuse: bool = False, **kwargs: Any) -> Any:
    path = path_with(message, *extra)
    options: dict[str, Any] = {"current_model": MODEL, "settings": SETTINGS, "skip_aborted_check": True}
    options.update(kwargs)
    return check_compaction(
        message,
        path=path,
        projection=project(path),
        message_entry_id="a1",
        recovery_attempted=fuse,
        **options,
    )


OVERFLOW = "Anthropic API error (400): prompt is too long: 213462 tokens > 200000 maximum"


def test_explicit_overflow_recovers_with_retry() -> None:
    decision = decide(assistant("error", error=OVERFLOW))
    assert (decision.action, decision.reason, decision.will_retry) == (Action.RECOVER, "overflow", True)


def test_second_overflow_blows_the_fuse_with_pis_message() -> None:
    decision = decide(assistant("error", error=OVERFLOW), fuse=True)
    assert decision.action is Action.FUSE_BLOWN and decision.error_message == OVERFLOW_RECOVERY_FAILED
    assert decision.error_message == (
        "Context overflow recovery failed after one compact-and-retry attempt. "
        "Try reducing context or switching to a larger-context model."
    )


def test_recoverable_length_uses_the_truncation_message_when_the_fuse_is_blown() -> None:
    message = assistant("length", output=1000)
    assert decide(message).action is Action.RECOVER
    blown = decide(message, fuse=True)
    assert blown.kind == "length" and blown.error_message == LENGTH_RECOVERY_FAILED


def test_silent_overflow_on_a_complete_answer_compacts_without_retry_even_with_the_fuse_blown() -> None:
    decision = decide(assistant("stop", input=12000), fuse=True)
    assert (decision.action, decision.reason, decision.will_retry) == (Action.COMPACT, "overflow", False)


def test_length_stop_with_no_output_near_the_window_is_overflow() -> None:
    decision = decide(assistant("length", input=9950, output=0))
    assert decision.action is Action.RECOVER and decision.kind == "overflow"


def test_disabled_compaction_decides_nothing() -> None:
    off = CompactionSettings(enabled=False)
    assert decide(assistant("error", error=OVERFLOW), settings=off).action is Action.NONE


def test_aborted_message_is_skipped_after_a_run_but_checked_before_a_prompt() -> None:
    aborted = assistant("aborted", input=9500)
    assert decide(aborted).action is Action.NONE
    assert decide(aborted, skip_aborted_check=False).action is Action.COMPACT


def test_overflow_from_another_model_is_not_recovered() -> None:
    other = ModelSpec(provider="openai", model_id="gpt", context_window=10000, max_output_tokens=4000)
    assert decide(assistant("error", error=OVERFLOW), current_model=other).action is Action.NONE


def test_threshold_runs_against_the_current_model_when_the_message_came_from_another() -> None:
    other = ModelSpec(provider="openai", model_id="gpt", context_window=5000, max_output_tokens=4000)
    decision = decide(assistant("stop", input=4500), current_model=other)
    assert (decision.action, decision.reason) == (Action.COMPACT, "threshold")


def test_message_older_than_the_latest_compaction_is_stale() -> None:
    compaction = {"type": "compaction", "id": "c1", "parentId": "a1", "timestamp": "2026-07-25T17:30:00.000Z",
                  "summary": "s", "firstKeptEntryId": "a1", "tokensBefore": 1}  # fmt: skip
    assert decide(assistant("error", error=OVERFLOW), compaction).action is Action.NONE
    assert decide(assistant("stop", input=9500), compaction).action is Action.NONE


def test_already_omitted_overflow_is_not_recovered_twice() -> None:
    edit = {"type": "context_edit", "id": "e1", "parentId": "a1", "timestamp": "2026-07-25T17:22:00.000Z",
            "targetId": "a1", "replacement": None}  # fmt: skip
    assert decide(assistant("error", error=OVERFLOW), edit).action is Action.NONE


def test_threshold_is_strict() -> None:
    assert decide(assistant("stop", totalTokens=9000)).action is Action.NONE
    assert decide(assistant("stop", totalTokens=9001)).action is Action.COMPACT


def test_threshold_after_an_error_ignores_usage_from_before_the_compaction() -> None:
    # The error carries no trustworthy usage; the only anchor predates the compaction.
    old = assistant("stop", ts=T0, totalTokens=9500)
    compaction = {"type": "compaction", "id": "c1", "parentId": "a1", "timestamp": "2026-07-25T17:30:00.000Z",
                  "summary": "s", "firstKeptEntryId": "a1", "tokensBefore": 1}  # fmt: skip
    failed = {"type": "message", "id": "a2", "parentId": "c1", "timestamp": "2026-07-25T17:31:00.000Z",
              "message": assistant("error", error="boom", ts=T0 + 11 * 60_000)}  # fmt: skip
    path = path_with(old, compaction, failed)
    decision = check_compaction(
        failed["message"], current_model=MODEL, settings=SETTINGS, path=path, projection=project(path),
        message_entry_id="a2", recovery_attempted=False,
    )  # fmt: skip
    assert decision.action is Action.NONE


def test_between_turns_threshold_uses_the_projected_estimate() -> None:
    path = path_with(assistant("stop", totalTokens=9500))
    assert exceeds_threshold(project(path), path, MODEL, SETTINGS)
    assert not exceeds_threshold(project(path), path, None, SETTINGS)


def test_fuse_resets_only_on_a_clean_reply() -> None:
    assert fuse_after_message_end(True, assistant("error")) is True
    assert fuse_after_message_end(True, assistant("length")) is True
    assert fuse_after_message_end(True, assistant("stop")) is False
    assert fuse_after_message_end(True, assistant("aborted")) is False


def test_transient_errors_retry_but_overflow_never_does() -> None:
    assert is_retryable_error(
        assistant("error", error="Anthropic API error (429): Rate limit reached"), 10000
    )
    assert is_retryable_error(assistant("error", error="Anthropic API error (529): Overloaded"), 10000)
    assert not is_retryable_error(assistant("error", error=OVERFLOW), 10000)
    assert not is_retryable_error(assistant("error", error="Anthropic API error (400): bad request"), 10000)
    assert not is_retryable_error(assistant("stop"), 10000)


def test_retry_delays_double() -> None:
    retry = RetrySettings()
    assert (retry.enabled, retry.max_retries) == (True, 3)
    assert [retry.delay_ms(n) for n in (1, 2, 3)] == [2000, 4000, 8000]
    assert RetrySettings.from_mapping({"baseDelayMs": 10}).delay_ms(2) == 20


def test_recovery_targets_take_the_tool_results_of_the_failed_turn() -> None:
    message = {
        **assistant("length"),
        "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
    }
    result = {"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-07-25T17:22:00.000Z",
              "message": {"role": "toolResult", "toolCallId": "c1", "content": []}}  # fmt: skip
    other = {"type": "message", "id": "t2", "parentId": "t1", "timestamp": "2026-07-25T17:22:00.000Z",
             "message": {"role": "toolResult", "toolCallId": "zz", "content": []}}  # fmt: skip
    assert recovery_targets(path_with(message, result, other), "a1") == ["a1", "t1"]
