"""LLM provider clients: OpenAI-compatible and Anthropic over httpx, streaming Pi-shaped messages."""

from typing import TYPE_CHECKING, Any

from providers.llm.errors import is_transient_error
from providers.llm.types import (
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
    "output_limits",
    "retry_transient",
    "stream_completion",
]

if TYPE_CHECKING:
    from providers.llm.client import (
        complete,
        fit_max_tokens,
        output_limits,
        retry_transient,
        stream_completion,
    )

_CLIENT = frozenset({"complete", "fit_max_tokens", "output_limits", "retry_transient", "stream_completion"})


def __getattr__(name: str) -> Any:
    # The clients (and httpx with them) load when first used: a process that only reads a provider's
    # settings (every Django process loads the provider model) needs neither.
    if name in _CLIENT:
        from providers.llm import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
