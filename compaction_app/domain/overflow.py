"""Classify an assistant message as context overflow, recoverable length stop or transient error.

Pi 1.6.0's rules (PI-FACTS §5.1, §5.2) are written against JavaScript values: a missing usage counter
is ``undefined``, sums with it are NaN and every comparison with NaN is false; ``contextWindow`` of 0
or ``None`` switches the usage checks off. The regexes are kept in their JavaScript spelling and
translated once, so that ``\\s``, ``.``, ``$`` and case folding behave as they do in JavaScript.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from pitree.jsregex import compile_js as _compile_js
from pitree.retryable import is_retryable_assistant_error


@dataclass(frozen=True, slots=True)
class JsPattern:
    """A case-insensitive JavaScript regex and the provider whose error text it recognises."""

    source: str
    provider: str
    regex: re.Pattern[str]

    def search(self, text: str) -> bool:
        """Return whether the pattern matches anywhere in ``text``, like ``RegExp.test``."""
        return self.regex.search(text) is not None


def _pattern(source: str, provider: str) -> JsPattern:
    return JsPattern(source=source, provider=provider, regex=_compile_js(source))


OVERFLOW_PATTERNS: Final[tuple[JsPattern, ...]] = (
    _pattern(r"prompt (?:is )?too long", "Anthropic, z.ai"),
    _pattern(r"prompt exceeds max length", "z.ai CN"),
    _pattern(r"request_too_large", "Anthropic 413"),
    _pattern(r"input is too long for requested model", "Bedrock"),
    _pattern(r"exceeds the context window", "OpenAI"),
    _pattern(
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
        "LiteLLM / OpenAI-compatible",
    ),
    _pattern(r"context window exceeded", "LiteLLM pre-call"),
    _pattern(r"input token count.*exceeds the maximum", "Gemini"),
    _pattern(r"maximum prompt length is \d+", "xAI"),
    _pattern(r"reduce the length of the messages", "Groq"),
    _pattern(r"maximum context length is \d+ tokens", "OpenRouter"),
    _pattern(r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?", "Poolside"),
    _pattern(r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)", "Together"),
    _pattern(r"exceeds the limit of \d+", "Copilot"),
    _pattern(r"exceeds the available context size", "llama.cpp"),
    _pattern(r"greater than the context length", "LM Studio"),
    _pattern(r"context window exceeds limit", "MiniMax"),
    _pattern(r"exceeded model token limit", "Kimi"),
    _pattern(r"too large for model with \d+ maximum context length", "Mistral"),
    _pattern(r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?", "DS4"),
    _pattern(r"model_context_window_exceeded", "z.ai"),
    _pattern(r"prompt too long; exceeded (?:max )?context length", "Ollama"),
    _pattern(r"range of input length should be", "DashScope / Qwen"),
    _pattern(r"context[_ ]length[_ ]exceeded", "generic"),
    _pattern(r"too many tokens", "generic"),
    _pattern(r"token limit exceeded", "generic"),
    _pattern(r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))", "any HTTP 413"),
)

# Rate limiting and unavailability often quote the request size; they must be retried, not compacted.
NON_OVERFLOW_PATTERNS: Final[tuple[JsPattern, ...]] = (
    _pattern(r"^(Throttling error|Service unavailable):", "throttling"),
    _pattern(r"rate limit", "rate limit"),
    _pattern(r"too many requests", "rate limit"),
)

# Cerebras answers an oversized request with a bodyless 400/413.
CEREBRAS_NO_BODY_PATTERN: Final = _pattern(r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)", "Cerebras")

OverflowReason = Literal["error_text", "cerebras_no_body", "silent", "length_stop"]


@dataclass(frozen=True, slots=True)
class OverflowVerdict:
    """Whether a message overflowed the context, why, and which error pattern said so."""

    overflow: bool
    reason: OverflowReason | None = None
    pattern: str | None = None


_NO_OVERFLOW: Final = OverflowVerdict(overflow=False)
_MISSING: Final = object()


def _js_number(value: object) -> float:
    """Return ``value`` as JavaScript arithmetic sees it; absent or non-numeric values give NaN."""
    if value is None:
        return 0.0  # JSON null counts as 0 in arithmetic; callers pass _MISSING for undefined
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return math.nan


def _usage_value(message: Mapping[str, object], name: str) -> object:
    usage = message.get("usage")
    return usage.get(name, _MISSING) if isinstance(usage, Mapping) else _MISSING


def _usage_counter(message: Mapping[str, object], name: str) -> float:
    return _js_number(_usage_value(message, name))


def _input_tokens(message: Mapping[str, object]) -> float:
    # Fresh plus cached input fills the window; cacheWrite is part of input and output comes after.
    return _usage_counter(message, "input") + _usage_counter(message, "cacheRead")


def _is_zero(value: object) -> bool:
    # Strict equality with 0: false, null and "0" do not count.
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _error_text(message: Mapping[str, object]) -> str | None:
    if message.get("stopReason") != "error":
        return None
    text = message.get("errorMessage")
    return text if isinstance(text, str) and text else None


def explain_context_overflow(
    message: Mapping[str, object], context_window: float | None = None
) -> OverflowVerdict:
    """Return the overflow verdict of an assistant message, with the rule that decided it."""
    text = _error_text(message)
    if text is not None and not any(p.search(text) for p in NON_OVERFLOW_PATTERNS):
        for pattern in OVERFLOW_PATTERNS:
            if pattern.search(text):
                return OverflowVerdict(overflow=True, reason="error_text", pattern=pattern.source)
        if message.get("provider") == "cerebras" and CEREBRAS_NO_BODY_PATTERN.search(text):
            return OverflowVerdict(
                overflow=True, reason="cerebras_no_body", pattern=CEREBRAS_NO_BODY_PATTERN.source
            )
    window = _js_number(context_window)
    if window == 0 or math.isnan(window):  # JavaScript falsiness of the window switches the checks off
        return _NO_OVERFLOW
    stop_reason = message.get("stopReason")
    if stop_reason == "stop" and _input_tokens(message) > window:
        return OverflowVerdict(overflow=True, reason="silent")
    zero_output = _is_zero(_usage_value(message, "output"))
    if stop_reason == "length" and zero_output and _input_tokens(message) >= 0.99 * window:
        return OverflowVerdict(overflow=True, reason="length_stop")
    return _NO_OVERFLOW


def is_context_overflow(message: Mapping[str, object], context_window: float | None = None) -> bool:
    """Return whether the message shows the request no longer fits the model's context window."""
    return explain_context_overflow(message, context_window).overflow


def is_recoverable_length(message: Mapping[str, object], desired_max_output: float | None) -> bool:
    """Return whether a length stop came from an output cap below the output the caller wants."""
    if message.get("stopReason") != "length":
        return False
    desired = _js_number(desired_max_output)
    return desired > 0 and _usage_counter(message, "output") < desired


def is_transient_error(message: Mapping[str, object]) -> bool:
    """Return whether an error stop is worth retrying as is: never an overflow, then Pi's retry rule."""
    if _error_text(message) is None or is_context_overflow(message):
        return False
    return is_retryable_assistant_error(message)
