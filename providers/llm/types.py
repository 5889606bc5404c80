"""Provider configuration and streaming events. Results are Pi-shaped assistant message dicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["openai-completions", "anthropic-messages"]
StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
Message = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    """One model at one provider.

    ``base_url`` follows Pi's model registry: OpenAI-compatible URLs include the version prefix
    (``https://api.openai.com/v1``), Anthropic's do not (``https://api.anthropic.com``).
    """

    api: Api
    provider: str
    base_url: str
    model_id: str
    api_key: str = field(repr=False)
    context_window: int
    max_output_tokens: int
    # The server accepts system messages mid-conversation (OpenAI-compatible only): later system
    # messages then go out in place as updates instead of being replayed into the leading prompt.
    mid_conversation_system: bool = False
    # The model thinks: a thinking level is sent (where the server takes one) and an OpenAI prompt
    # may go out as the developer role.
    reasoning: bool = False
    # The model takes pictures; a text-only model gets Pi's omission note in place of each one.
    accepts_images: bool = True
    # Pi's OpenAI-compatible ``compat`` settings; what is left out is detected from the host.
    compat: Mapping[str, Any] = field(default_factory=dict)
    # Prices in dollars per million tokens (input, output, cacheRead, cacheWrite), as Pi's model cost.
    cost: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TextDelta:
    index: int  # position of the block in the final message's content
    delta: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    index: int
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    id: str
    name: str
    arguments_delta: str  # a fragment of the argument JSON as the provider streams it


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    index: int
    tool_call: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Done:
    """Last event of every call, including failed and aborted ones."""

    message: Mapping[str, Any]


StreamEvent = TextDelta | ThinkingDelta | ToolCallDelta | ToolCallEnd | Done
EventSink = Callable[[StreamEvent], None]
