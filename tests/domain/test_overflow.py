"""Overflow classification: Pi's recorded verdicts plus the rules a user would notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compaction_app.domain.overflow import (
    explain_context_overflow,
    is_context_overflow,
    is_recoverable_length,
    is_transient_error,
)
from compaction_app.sessiontool import overflow as overflow_command
from tests.conformance.compare import ConformanceRun, assert_conforms, run_params


def message(
    stop_reason: str = "error",
    error: str | None = None,
    provider: str = "anthropic",
    **usage: object,
) -> dict[str, object]:
    counters: dict[str, object] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    counters.update(usage)
    result: dict[str, object] = {
        "role": "assistant",
        "content": [],
        "provider": provider,
        "usage": counters,
        "stopReason": stop_reason,
    }
    if error is not None:
        result["errorMessage"] = error
    return result


def error(text: str, provider: str = "anthropic") -> dict[str, object]:
    return message("error", text, provider)


@pytest.mark.parametrize("run", run_params("overflow"))
def test_matches_pi_recorded_output(run: ConformanceRun) -> None:
    assert_conforms(run, overflow_command.run)


class TestErrorText:
    def test_rate_limit_anywhere_wins_over_overflow_text(self) -> None:
        assert not is_context_overflow(error("Rate limit reached: prompt is too long"))
        assert not is_context_overflow(error("429 Too Many Requests: context_length_exceeded"))

    def test_throttling_is_excluded_only_as_a_prefix(self) -> None:
        assert not is_context_overflow(error("Throttling error: too many tokens"))
        assert is_context_overflow(error("ThrottlingException: Too many tokens, please wait"))

    def test_error_text_counts_only_for_error_stops(self) -> None:
        assert not is_context_overflow(message("stop", "prompt is too long"))
        assert not is_context_overflow(message("length", "prompt is too long"), 100_000)
        assert not is_context_overflow(message("error", ""))

    def test_413_counts_only_at_the_start(self) -> None:
        assert is_context_overflow(error("413"))
        assert is_context_overflow(error("413: Payload Too Large"))
        assert is_context_overflow(error("OpenAI Responses API error (413): too big"))
        assert not is_context_overflow(error("4130 bytes"))
        assert not is_context_overflow(error("Error: upstream returned 413 Payload Too Large"))

    def test_bodyless_400_is_overflow_only_for_cerebras(self) -> None:
        assert is_context_overflow(error("400 status code (no body)", provider="cerebras"))
        assert is_context_overflow(error("413(no body)", provider="cerebras"))
        assert not is_context_overflow(error("400 status code (no body)", provider="openai"))

    def test_verdict_names_the_matching_pattern(self) -> None:
        verdict = explain_context_overflow(error("The input token count (1196265) exceeds the maximum"))
        assert verdict.overflow
        assert verdict.reason == "error_text"
        assert verdict.pattern == "input token count.*exceeds the maximum"


class TestJavaScriptRegexSemantics:
    def test_case_folding_stays_ascii(self) -> None:
        assert is_context_overflow(error("PROMPT IS TOO LONG"))
        # Python's Unicode folding maps the Kelvin sign to 'k' and the long s to 's'; JavaScript does not.
        assert not is_context_overflow(error("too many to\u212aens"))
        assert not is_context_overflow(error("prompt i\u017f too long"))

    def test_digits_stay_ascii(self) -> None:
        assert is_context_overflow(error("exceeds the limit of 128000"))
        assert not is_context_overflow(error("exceeds the limit of \u0661\u0662\u0668"))

    def test_dot_stops_at_javascript_line_terminators(self) -> None:
        assert is_context_overflow(error("input token count (5) now exceeds the maximum"))
        for separator in ("\n", "\r", "\u2028", "\u2029"):
            assert not is_context_overflow(error(f"input token count (5){separator}exceeds the maximum"))
        assert is_context_overflow(error("input token count (5)\u0085exceeds the maximum"))

    def test_space_class_is_javascripts(self) -> None:
        assert is_context_overflow(error("413\u00a0Payload Too Large"))
        assert is_context_overflow(error("413\ufeff"))
        assert not is_context_overflow(error("413\u0085Payload Too Large"))
        assert is_context_overflow(error("400 \u3000(no body)", provider="cerebras"))


class TestSilentOverflow:
    def test_strictly_more_than_the_window(self) -> None:
        assert not is_context_overflow(message("stop", input=128_000), 128_000)
        assert is_context_overflow(message("stop", input=120_000, cacheRead=8_001), 128_000)

    def test_cache_writes_and_output_do_not_count(self) -> None:
        assert not is_context_overflow(message("stop", input=100, cacheWrite=10**9, output=10**9), 1_000)

    def test_zero_or_missing_window_disables_usage_checks(self) -> None:
        huge = message("stop", input=10**9)
        assert not is_context_overflow(huge)
        assert not is_context_overflow(huge, 0)
        assert not is_context_overflow(huge, None)
        assert is_context_overflow(huge, 1)

    def test_missing_usage_never_overflows(self) -> None:
        no_cache_read = message("stop", input=10**9)
        del no_cache_read["usage"]["cacheRead"]  # type: ignore[attr-defined]
        assert not is_context_overflow(no_cache_read, 1_000)
        no_usage = message("stop")
        del no_usage["usage"]
        assert not is_context_overflow(no_usage, 1_000)

    def test_null_counter_counts_as_zero(self) -> None:
        assert is_context_overflow(message("stop", input=2_000, cacheRead=None), 1_000)


class TestLengthStop:
    def test_ninety_nine_percent_with_no_output(self) -> None:
        assert is_context_overflow(message("length", input=99_000, output=0), 100_000)
        assert not is_context_overflow(message("length", input=98_999, output=0), 100_000)

    def test_needs_output_exactly_zero(self) -> None:
        assert not is_context_overflow(message("length", input=100_000, output=1), 100_000)
        assert not is_context_overflow(message("length", input=100_000, output=None), 100_000)
        assert not is_context_overflow(message("length", input=100_000, output=False), 100_000)

    def test_recoverable_when_output_below_desired(self) -> None:
        assert is_recoverable_length(message("length", output=4_000), 8_192)
        assert not is_recoverable_length(message("length", output=8_192), 8_192)
        assert not is_recoverable_length(message("length", output=10), 0)
        assert not is_recoverable_length(message("length", output=10), None)
        assert not is_recoverable_length(message("stop", output=10), 8_192)


class TestTransientErrors:
    @pytest.mark.parametrize(
        "text",
        [
            "429 Too Many Requests",
            "Anthropic API error (529): overloaded_error",
            "503 Service Unavailable",
            "Service unavailable: prompt is too long",
            "Rate limit reached for requests",
            "read ECONNRESET",
            "Anthropic stream ended before message_stop",
            "Stream ended without finish_reason",
            "stream was interrupted",
            '{"type":"error","error":{"type":"api_error","message":"Connection closed."}}',
            "Request timed out",
        ],
    )
    def test_retryable_failures(self, text: str) -> None:
        assert is_transient_error(error(text))

    @pytest.mark.parametrize(
        "text",
        [
            "prompt is too long: 500 tokens > 400 maximum",
            "Too many tokens",
            "401 invalid x-api-key",
            '429: {"message":"You exceeded your current quota","code":"insufficient_quota"}',
            "429 Monthly usage limit reached",
        ],
    )
    def test_overflow_and_permanent_failures_are_not_retried(self, text: str) -> None:
        assert not is_transient_error(error(text))

    def test_only_error_stops_are_transient(self) -> None:
        assert not is_transient_error(message("stop", "429 Too Many Requests"))


class TestCommand:
    def test_bare_message_and_window_argument(self, tmp_path: Path) -> None:
        path = tmp_path / "m.json"
        path.write_text(json.dumps(message("stop", input=5_000)))
        assert overflow_command.run([str(path)]) == {"contextWindow": None, "isContextOverflow": False}
        assert overflow_command.run([str(path), "4000"]) == {"contextWindow": 4000, "isContextOverflow": True}

    def test_window_argument_overrides_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "m.json"
        path.write_text(json.dumps({"message": message("stop", input=5_000), "contextWindow": 4_000}))
        assert overflow_command.run([str(path), "8000"]) == {
            "contextWindow": 8000,
            "isContextOverflow": False,
        }

    def test_unreadable_file_is_reported(self, tmp_path: Path) -> None:
        answer = overflow_command.run([str(tmp_path / "missing.json")])
        assert isinstance(answer, dict) and "error" in answer
        assert overflow_command.run([]) == {"error": overflow_command.USAGE}
