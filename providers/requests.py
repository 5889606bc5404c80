"""The request a run sends for a projected context, and what its parts cost of the window.

Runs (``agent``) and the context panel both build the request here, so the panel's system prompt
and tools are the ones a run would send: Pi's prompt replayed from the system messages, the tools in
force, and the conversation converted for the model (``providers.llm.transcript``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pitree.jsjson import js_stringify
from pitree.messages import convert_to_llm
from pitree.tokens import (
    ContextBreakdown,
    TokenEstimate,
    break_down_context,
    estimate_text_tokens,
    estimate_tokens,
)
from providers.llm.transcript import Transcript, split_transcript
from providers.llm.types import ToolSpec

__all__ = ["context_breakdown", "context_breakdown_from_sums", "request_transcript", "tool_definitions_json"]


def request_transcript(messages: Sequence[Mapping[str, Any]], *, in_place: bool = False) -> Transcript:
    """What a provider receives for projected ``messages``: prompt, conversation and tools in force.

    ``in_place`` only for providers that take system messages mid-conversation; every provider
    configured in the admin takes Pi's default, one leading prompt replaying all system messages.
    """
    return split_transcript(convert_to_llm(messages), in_place=in_place)


def tool_definitions_json(tools: Sequence[ToolSpec]) -> str:
    """The tool definitions as one JSON text (name, description, schema), the part every API sends."""
    return js_stringify(
        [{"name": t.name, "description": t.description, "parameters": dict(t.parameters)} for t in tools]
    )


def context_breakdown(messages: Sequence[Mapping[str, Any]], estimate: TokenEstimate) -> ContextBreakdown:
    """Split the context estimate of projected ``messages`` into system prompt, tools and messages."""
    transcript = request_transcript(messages)
    return break_down_context(
        estimate,
        system_prompt=estimate_text_tokens(transcript.system or ""),
        tools=estimate_text_tokens(tool_definitions_json(transcript.tools)) if transcript.tools else 0,
        # The conversation as the estimator counts it; system messages went into the prompt above.
        messages=sum(estimate_tokens(m) for m in messages if m.get("role") != "system"),
    )


def context_breakdown_from_sums(
    system_messages: Sequence[Mapping[str, Any]], plain_tokens: int, estimate: TokenEstimate
) -> ContextBreakdown:
    """Split an estimate read from running sums: the prompt and tools come from the system messages
    alone, ``plain_tokens`` are the non-system messages' estimates (as ``context_breakdown`` counts)."""
    transcript = request_transcript(system_messages)
    return break_down_context(
        estimate,
        system_prompt=estimate_text_tokens(transcript.system or ""),
        tools=estimate_text_tokens(tool_definitions_json(transcript.tools)) if transcript.tools else 0,
        messages=plain_tokens,
    )
