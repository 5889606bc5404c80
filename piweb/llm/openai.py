"""OpenAI-compatible chat completions (``POST {base_url}/chat/completions``, streamed)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from piweb.llm.messages import images_of, prepare_messages, text_of
from piweb.llm.sse import SseEvent
from piweb.llm.stream import AssistantBuilder, StreamError
from piweb.llm.types import ProviderConfig, StopReason, ToolSpec

LABEL = "OpenAI"
_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


def build_request(
    config: ProviderConfig,
    *,
    system: str | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] | None,
    max_tokens: int | None,
    session_id: str,
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Return url, headers and JSON body. ``session_id`` goes in ``user`` and a header for routing."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in prepare_messages(messages):
        wire.extend(_to_wire(message))
    body: dict[str, Any] = {
        "model": config.model_id,
        "messages": wire,
        "stream": True,
        "stream_options": {"include_usage": True},
        "user": session_id,
    }
    if max_tokens:
        body["max_completion_tokens"] = max_tokens
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in tools
        ]
    headers = {"accept": "text/event-stream", "x-session-id": session_id}
    if config.api_key:  # keyless local servers reject a bare "Bearer "
        headers["authorization"] = f"Bearer {config.api_key}"
    return f"{config.base_url.rstrip('/')}/chat/completions", headers, body


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"}}


def _user_content(content: str | Sequence[Mapping[str, Any]]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": b["text"]} if b["type"] == "text" else _image_part(b)
        for b in content
        if b.get("type") in ("text", "image")
    ]


def _to_wire(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role = message["role"]
    if role == "system":  # an update in place (see piweb.llm.transcript)
        return [{"role": "system", "content": text_of(message["content"])}] if message["content"] else []
    if role == "user":
        return [{"role": "user", "content": _user_content(message["content"])}]
    if role == "assistant":
        blocks = message["content"]
        out: dict[str, Any] = {"role": "assistant", "content": text_of(blocks) or None}
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        if calls:
            out["tool_calls"] = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("arguments") or {})},
                }
                for b in calls
            ]
        return [out]
    if role == "toolResult":
        content = message["content"]
        wire = [{"role": "tool", "tool_call_id": message["toolCallId"], "content": text_of(content) or ""}]
        images = images_of(content)
        if images:
            # Tool messages cannot carry images here, so they follow as a user message.
            parts = [{"type": "text", "text": "Attached image(s) from tool result:"}]
            wire.append({"role": "user", "content": parts + [_image_part(b) for b in images]})
        return wire
    return []


class Decoder:
    """Map chat.completion.chunk events onto the assistant message."""

    def __init__(self, builder: AssistantBuilder) -> None:
        self._builder = builder
        self._tools: dict[int, int] = {}  # provider tool index -> content index
        self.stop_reason: StopReason | None = None
        self.finished = False
        self.error: str | None = None

    def feed(self, event: SseEvent) -> None:
        if event.data.strip() == "[DONE]":
            self.finished = True
            return
        try:
            chunk = json.loads(event.data)
        except ValueError as exc:
            raise StreamError(f"invalid JSON in stream: {event.data[:200]}") from exc
        if not isinstance(chunk, dict):
            raise StreamError(f"unexpected stream data: {event.data[:200]}")
        if isinstance(chunk.get("error"), dict):
            raise StreamError(str(chunk["error"].get("message") or chunk["error"]))
        if chunk.get("id"):
            self._builder.message["responseId"] = chunk["id"]
        if isinstance(chunk.get("usage"), dict):
            self._usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            self._delta(choice.get("delta") or {})
            if choice.get("finish_reason"):
                self._finish(choice["finish_reason"])

    def _delta(self, delta: Mapping[str, Any]) -> None:
        b = self._builder
        # Compatible servers name the reasoning stream differently.
        thinking = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thinking, str) and thinking:
            b.add_thinking(b.trailing("thinking"), thinking)
        if isinstance(delta.get("content"), str) and delta["content"]:
            b.add_text(b.trailing("text"), delta["content"])
        for call in delta.get("tool_calls") or []:
            key = call.get("index", 0)
            function = call.get("function") or {}
            if key not in self._tools:
                block = {"type": "toolCall", "id": call.get("id") or "", "name": "", "arguments": {}}
                self._tools[key] = b.open_block(block)
            index = self._tools[key]
            block = b.message["content"][index]
            if call.get("id"):
                block["id"] = call["id"]
            if function.get("name"):
                block["name"] = function["name"]
            if function.get("arguments"):
                b.add_arguments(index, function["arguments"])

    def _finish(self, reason: str) -> None:
        for index in self._tools.values():
            self._builder.end_tool_call(index)
        self.stop_reason = _FINISH.get(reason, "error")
        if self.stop_reason == "error":
            self.error = f"{LABEL} finish_reason: {reason}"

    def _usage(self, raw: Mapping[str, Any]) -> None:
        cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        usage = self._builder.usage
        usage["input"] = (raw.get("prompt_tokens") or 0) - cached
        usage["output"] = raw.get("completion_tokens") or 0
        usage["cacheRead"] = cached
        usage["cacheWrite"] = 0
