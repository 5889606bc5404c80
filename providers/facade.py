"""What other apps may use of ``providers``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from providers import requests
from providers.llm import (
    ProviderConfig,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    complete,
    fit_max_tokens,
    output_limits,
    retry_transient,
    stream_completion,
)
from providers.llm.client import fit_thinking
from providers.llm.compat import resolve_compat
from providers.llm.estimate import estimate_request_tokens
from providers.llm.stream import zero_usage
from providers.llm.transcript import Transcript
from providers.models import LLMProvider
from providers.requests import context_breakdown, context_breakdown_from_sums
from providers.throttles import LLMThrottle
from providers.windows import available_models, context_window_for

__all__ = [
    "LLMProvider",
    "LLMThrottle",
    "ProviderConfig",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "Transcript",
    "available_models",
    "complete",
    "context_breakdown",
    "context_breakdown_from_sums",
    "context_window_for",
    "estimate_request_tokens",
    "fit_max_tokens",
    "fit_thinking",
    "output_limits",
    "requests",
    "resolve_compat",
    "retry_transient",
    "stream_completion",
    "zero_usage",
]
