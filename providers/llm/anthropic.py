"""Anthropic Messages API (``POST {base_url}/v1/messages``, streamed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pitree.tree import js_trim
from providers.llm.arguments import parse_json_with_repair
from providers.llm.messages import SEE_ATTACHED_IMAGE, for_model, prepare_messages
from providers.llm.sse import SseEvent
from providers.llm.stream import AssistantBuilder, ProviderStreamError
from providers.llm.tool_ids import for_anthropic
from providers.llm.types import ProviderConfig, StopReason, ToolSpec

LABEL = "Anthropic"
API_VERSION = "2023-06-01"
_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}
_CACHE = {"type": "ephemeral"}
# The SSE events Pi's client reads (others are passed over, whatever their data says).
_MESSAGE_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
_NULL_EVENT = "Cannot read properties of null (reading 'type')"
# What Pi stores as the text of a redacted thinking block.
REDACTED_THINKING = "[Reasoning redacted]"


def build_request(
    config: ProviderConfig,
    *,
    system: str | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] | None,
    max_tokens: int | None,
    session_id: str,
    cache: bool = True,
    thinking_level: str | None = None,
    thinking_budget: int | None = None,
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Return url, headers and JSON body as Pi sends them.

    With ``cache`` (Pi's default) the prompt, the last tool and the last message, when it is the user's,
    carry a cache breakpoint. ``session_id`` is not sent: Pi sends no user id. A reasoning model thinks
    with ``thinking_budget`` tokens at a thinking level, and is told not to think at ``off``.
    """
    wire: list[dict[str, Any]] = []
    own = for_model(messages, config, for_anthropic)
    for message in prepare_messages(own, accepts_images=config.accepts_images):
        block = _to_wire(message)
        if block is None:
            continue
        # Consecutive tool results must share one user turn.
        if wire and block["role"] == "user" and _is_results(block) and _is_results(wire[-1]):
            wire[-1]["content"].extend(block["content"])
        else:
            wire.append(block)
    body: dict[str, Any] = {
        "model": config.model_id,
        "messages": wire,
        "max_tokens": max_tokens or config.max_output_tokens,
        "stream": True,
    }
    if system:
        body["system"] = [{"type": "text", "text": system, **({"cache_control": _CACHE} if cache else {})}]
    if tools:
        body["tools"] = [
            {
                "name": t.name,
                "description": t.description,
                "eager_input_streaming": True,
                "input_schema": _input_schema(t.parameters),
            }
            for t in tools
        ]
        if cache:
            body["tools"][-1]["cache_control"] = _CACHE
    if config.reasoning:
        if not thinking_level or thinking_level == "off":
            body["thinking"] = {"type": "disabled"}
        else:
            body["thinking"] = {
                "type": "enabled",
                "budget_tokens": thinking_budget or 1024,
                "display": "summarized",
            }
    if cache and wire and wire[-1]["role"] == "user":
        last = wire[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": _CACHE}]
        elif last["content"] and last["content"][-1].get("type") in ("text", "image", "tool_result"):
            last["content"][-1]["cache_control"] = _CACHE
    headers = {"anthropic-version": API_VERSION, "accept": "text/event-stream"}
    if config.api_key:
        headers["x-api-key"] = config.api_key
    return f"{config.base_url.rstrip('/')}/v1/messages?beta=true", headers, body


def _input_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema as the API takes it: root combinators (anyOf, oneOf, allOf) are refused there."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": parameters.get("properties") or {},
        "required": parameters.get("required") or [],
    }
    for key in ("additionalProperties", "$defs", "definitions"):
        if key in parameters:
            schema[key] = parameters[key]
    return schema


def _is_results(message: Mapping[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, list) and bool(content) and all(b["type"] == "tool_result" for b in content)


def _result_content(content: str | Sequence[Mapping[str, Any]]) -> str | list[dict[str, Any]]:
    """A tool result's content: its text joined by newlines, or, when it holds images, its blocks as they
    are (empty text included), opened by Pi's note when none is text."""
    if isinstance(content, str):
        return content
    if not any(b.get("type") == "image" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    blocks = [
        {"type": "text", "text": b["text"]} if b.get("type") == "text" else _image(b)
        for b in content
        if b.get("type") in ("text", "image")
    ]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": SEE_ATTACHED_IMAGE})
    return blocks


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    source = {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}
    return {"type": "image", "source": source}


def _blocks(content: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") == "text" and b["text"]:  # the API rejects empty text blocks
            out.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "image":
            out.append(_image(b))
    return out


def _to_wire(message: Mapping[str, Any]) -> dict[str, Any] | None:
    role = message["role"]
    if role == "user":
        content = message["content"]
        if isinstance(content, str):
            return {"role": "user", "content": content} if content.strip() else None
        blocks = _blocks(content)
        return {"role": "user", "content": blocks} if blocks else None
    if role == "assistant":
        out: list[dict[str, Any]] = []
        for b in message["content"]:
            kind = b.get("type")
            if kind == "text" and js_trim(b["text"]):
                out.append({"type": "text", "text": b["text"]})
            elif kind == "thinking" and b.get("redacted"):
                sealed = b.get("thinkingSignature")
                out.append({"type": "redacted_thinking", **({} if sealed is None else {"data": sealed})})
            elif kind == "thinking" and js_trim(b.get("thinkingSignature") or ""):
                out.append(
                    {"type": "thinking", "thinking": b["thinking"], "signature": b["thinkingSignature"]}
                )
            elif kind == "thinking" and js_trim(b.get("thinking") or ""):
                # The model's own thinking left unsigned (a stopped stream) cannot be replayed as
                # thinking; other models' thinking never gets here (see for_model).
                out.append({"type": "text", "text": b["thinking"]})
            elif kind == "toolCall":
                out.append(
                    {"type": "tool_use", "id": b["id"], "name": b["name"], "input": b.get("arguments") or {}}
                )
        return {"role": "assistant", "content": out} if out else None
    if role == "toolResult":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message["toolCallId"],
            "content": _result_content(message["content"]),
            "is_error": bool(message.get("isError")),
        }
        return {"role": "user", "content": [result]}
    return None


class Decoder:
    """Map Messages stream events onto the assistant message."""

    def __init__(self, builder: AssistantBuilder) -> None:
        self._builder = builder
        self._blocks: dict[int, int] = {}  # provider block index -> content index
        self.stop_reason: StopReason | None = None
        self.finished = False
        self.error: str | None = None
        self.started = False  # message_start arrived
        self.abort_text = "This operation was aborted"
        self.abort_closes_calls = False

    def incomplete(self) -> str | None:
        if self.started and not self.finished:
            return f"{LABEL} stream ended before message_stop"
        return None if self.stop_reason is not None else f"{LABEL} stream ended without a stop reason"

    def feed(self, event: SseEvent) -> None:
        if event.event == "error":
            # Stored as sent: Pi keeps the event's data as the error text.
            raise ProviderStreamError(event.data)
        if event.event not in _MESSAGE_EVENTS:
            return  # Pi reads only the message events by name; an error payload elsewhere is passed over
        data, error = parse_json_with_repair(event.data)
        if error is None and data is None:
            error = _NULL_EVENT  # what reading the type of JSON null throws in Pi's reader
        if error is not None:
            raw = "\\n".join(event.raw)  # the lines joined by a backslash and "n", as Pi joins them
            raise ProviderStreamError(
                f"Could not parse {LABEL} SSE event {event.event}: {error}; data={event.data}; raw={raw}"
            )
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        b = self._builder
        if kind == "message_start":
            self.started = True
            message = data.get("message") or {}
            if message.get("id"):
                b.message["responseId"] = message["id"]
            self._usage(message.get("usage") or {})
        elif kind == "content_block_start":
            self._start(data.get("index", 0), data.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(data.get("index", 0), data.get("delta") or {})
        elif kind == "content_block_stop":
            index = self._blocks.get(data.get("index", 0))
            if index is not None and b.message["content"][index]["type"] == "toolCall":
                b.end_tool_call(index)
        elif kind == "message_delta":
            self._usage(data.get("usage") or {})
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                b.message["rawStopReason"] = reason
                self.stop_reason = _STOP.get(reason, "error")
                if self.stop_reason == "error":
                    self.error = f"{LABEL} stop_reason: {reason}"
        elif kind == "message_stop":
            self.finished = True

    def _start(self, provider_index: int, block: Mapping[str, Any]) -> None:
        b = self._builder
        kind = block.get("type")
        if kind == "text":
            index = b.open_block({"type": "text", "text": ""})
            if block.get("text"):
                b.add_text(index, block["text"])
        elif kind == "thinking":
            index = b.open_block({"type": "thinking", "thinking": ""})
        elif kind == "redacted_thinking":
            # The reasoning itself is sealed in ``data`` (sent back as it came); readers get Pi's note.
            redacted = {"type": "thinking", "thinking": REDACTED_THINKING}
            index = b.open_block({**redacted, "thinkingSignature": block.get("data", ""), "redacted": True})
        elif kind == "tool_use":
            tool_call = {
                "type": "toolCall",
                "id": block.get("id", ""),
                "name": block.get("name", ""),
                "arguments": {},
            }
            index = b.open_block(tool_call)
        else:
            return
        self._blocks[provider_index] = index

    def _delta(self, provider_index: int, delta: Mapping[str, Any]) -> None:
        index = self._blocks.get(provider_index)
        if index is None:
            return
        b, kind = self._builder, delta.get("type")
        if kind == "text_delta":
            b.add_text(index, delta.get("text", ""))
        elif kind == "thinking_delta":
            b.add_thinking(index, delta.get("thinking", ""))
        elif kind == "signature_delta":
            b.add_signature(index, delta.get("signature", ""))
        elif kind == "input_json_delta":
            b.add_arguments(index, delta.get("partial_json", ""))

    def _usage(self, raw: Mapping[str, Any]) -> None:
        # message_start carries the input side; message_delta carries cumulative output and may repeat input.
        usage = self._builder.usage
        for wire, ours in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("cache_read_input_tokens", "cacheRead"),
            ("cache_creation_input_tokens", "cacheWrite"),
        ):
            if raw.get(wire) is not None:
                usage[ours] = raw[wire]
        long_write = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
        if long_write is not None or "cacheWrite1h" not in usage:
            usage["cacheWrite1h"] = long_write or 0
        thinking = (raw.get("output_tokens_details") or {}).get("thinking_tokens")
        if thinking is not None:
            usage["reasoning"] = thinking
        self._builder.price()
