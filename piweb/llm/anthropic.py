"""Anthropic Messages API (``POST {base_url}/v1/messages``, streamed)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from piweb.llm.messages import prepare_messages
from piweb.llm.sse import SseEvent
from piweb.llm.stream import AssistantBuilder, StreamError
from piweb.llm.types import ProviderConfig, StopReason, ToolSpec

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


def build_request(
    config: ProviderConfig,
    *,
    system: str | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] | None,
    max_tokens: int | None,
    session_id: str,
    cache: bool,
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Return url, headers and JSON body; cache breakpoints are set only when ``cache`` is true."""
    wire: list[dict[str, Any]] = []
    for message in prepare_messages(messages):
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
        "metadata": {"user_id": session_id},
    }
    if system:
        body["system"] = [{"type": "text", "text": system}]
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": _input_schema(t.parameters)}
            for t in tools
        ]
    if cache:
        if system:
            body["system"][-1]["cache_control"] = _CACHE
        last_user = next((m for m in reversed(wire) if m["role"] == "user"), None)
        if last_user is not None and last_user["content"]:
            last_user["content"][-1]["cache_control"] = _CACHE
    headers = {"anthropic-version": API_VERSION, "accept": "text/event-stream", "x-session-id": session_id}
    if config.api_key:
        headers["x-api-key"] = config.api_key
    return f"{config.base_url.rstrip('/')}/v1/messages", headers, body


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
    return bool(content) and all(b["type"] == "tool_result" for b in content)


def _blocks(content: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") == "text" and b["text"]:  # the API rejects empty text blocks
            out.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "image":
            source = {"type": "base64", "media_type": b["mimeType"], "data": b["data"]}
            out.append({"type": "image", "source": source})
    return out


def _to_wire(message: Mapping[str, Any]) -> dict[str, Any] | None:
    role = message["role"]
    if role == "user":
        blocks = _blocks(message["content"])
        return {"role": "user", "content": blocks} if blocks else None
    if role == "assistant":
        out: list[dict[str, Any]] = []
        for b in message["content"]:
            kind = b.get("type")
            if kind == "text" and b["text"]:
                out.append({"type": "text", "text": b["text"]})
            elif kind == "thinking" and b.get("redacted") and b.get("thinkingSignature"):
                out.append({"type": "redacted_thinking", "data": b["thinkingSignature"]})
            elif kind == "thinking" and b.get("thinkingSignature"):
                out.append(
                    {"type": "thinking", "thinking": b["thinking"], "signature": b["thinkingSignature"]}
                )
            elif kind == "thinking" and b.get("thinking"):
                # Unsigned thinking (another provider's) cannot be replayed as thinking.
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
            "content": _blocks(message["content"]) or [{"type": "text", "text": "(no output)"}],
        }
        if message.get("isError"):
            result["is_error"] = True
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

    def feed(self, event: SseEvent) -> None:
        try:
            data = json.loads(event.data)
        except ValueError as exc:
            raise StreamError(f"invalid JSON in stream: {event.data[:200]}") from exc
        if not isinstance(data, dict):
            raise StreamError(f"unexpected stream data: {event.data[:200]}")
        kind = data.get("type", event.event)
        b = self._builder
        if kind == "message_start":
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
                self.stop_reason = _STOP.get(reason, "error")
                if self.stop_reason == "error":
                    self.error = f"{LABEL} stop_reason: {reason}"
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            error = data.get("error") or {}
            raise StreamError(f"{error.get('type', 'error')}: {error.get('message', event.data[:200])}")

    def _start(self, provider_index: int, block: Mapping[str, Any]) -> None:
        b = self._builder
        kind = block.get("type")
        if kind == "text":
            index = b.open_block({"type": "text", "text": ""})
            if block.get("text"):
                b.add_text(index, block["text"])
        elif kind in ("thinking", "redacted_thinking"):
            index = b.open_block({"type": "thinking", "thinking": ""})
            if kind == "redacted_thinking":
                b.message["content"][index].update(redacted=True, thinkingSignature=block.get("data", ""))
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
