"""LLM provider clients: OpenAI-compatible and Anthropic over httpx, streaming Pi-shaped messages."""

from piweb.llm.client import complete, fit_max_tokens, retry_transient, stream_completion
from piweb.llm.errors import is_transient_error
from piweb.llm.types import (
    Done,
    ProviderConfig,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolSpec,
)

__all__ = [
    "Done",
    "ProviderConfig",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolSpec",
    "complete",
    "fit_max_tokens",
    "is_transient_error",
    "retry_transient",
    "stream_completion",
]
