"""OpenAI-compatible chat completions (``POST {base_url}/chat/completions``, streamed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pitree.jsjson import INVALID, js_stringify, js_truthy, parse_json
from pitree.tree import js_trim
from providers.llm.compat import OpenAICompat, resolve_compat
from providers.llm.messages import (
    NO_TOOL_OUTPUT,
    SEE_ATTACHED_IMAGE,
    for_model,
    images_of,
    prepare_messages,
    text_of,
)
from providers.llm.reasoning_details import append_detail, is_detail, replayed_details, serialize_details
from providers.llm.sse import SseEvent
from providers.llm.stream import AssistantBuilder, ProviderStreamError
from providers.llm.tool_ids import for_openai_completions
from providers.llm.types import ProviderConfig, StopReason, ToolSpec

LABEL = "OpenAI"
# What OpenAI's client says of event data that is not JSON (Pi stores it as is).
MALFORMED_EVENT = "Error reading response: malformed server-sent event JSON."
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
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
    thinking_level: str | None = None,
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Return url, headers and JSON body, shaped by the provider's compat settings as Pi shapes them.

    ``session_id`` only becomes OpenAI's own ``prompt_cache_key``; other servers get no routing field.
    """
    compat = resolve_compat(config.provider, config.base_url, config.compat)
    role = "developer" if config.reasoning and compat.supports_developer_role else "system"
    wire: list[dict[str, Any]] = [{"role": role, "content": system}] if system else []
    own = for_model(messages, config, lambda call_id: for_openai_completions(call_id, config.provider))
    for message in prepare_messages(own, accepts_images=config.accepts_images):
        wire.extend(_to_wire(message, compat))
    body: dict[str, Any] = {"model": config.model_id, "messages": wire, "stream": True}
    if session_id and "api.openai.com" in config.base_url:
        body["prompt_cache_key"] = session_id[:64]
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    if max_tokens:
        body[compat.max_tokens_field] = max_tokens
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in tools
        ]
    effort = _reasoning_effort(thinking_level)
    if effort and config.reasoning and compat.supports_reasoning_effort:
        body["reasoning_effort"] = effort
    headers = {"accept": "text/event-stream"}
    if config.api_key:  # keyless local servers reject a bare "Bearer "
        headers["authorization"] = f"Bearer {config.api_key}"
    return f"{config.base_url.rstrip('/')}/chat/completions", headers, body


def _reasoning_effort(level: str | None) -> str | None:
    """OpenAI's effort for a thinking level; ``off`` sends none, and the top level maps to ``high``."""
    if not level or level == "off":
        return None
    return "high" if level == "xhigh" else level


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


def _to_wire(message: Mapping[str, Any], compat: OpenAICompat) -> list[dict[str, Any]]:
    role = message["role"]
    if role == "system":  # an update in place (see providers.llm.transcript)
        return [{"role": "system", "content": text_of(message["content"])}] if message["content"] else []
    if role == "user":
        return [{"role": "user", "content": _user_content(message["content"])}]
    if role == "assistant":
        blocks = message["content"]
        empty = "" if compat.requires_non_null_assistant_content else None
        # Text parts are joined as they are, blank ones dropped; reasoning goes back in its own field.
        text = "".join(b["text"] for b in blocks if b.get("type") == "text" and js_trim(b["text"]))
        out: dict[str, Any] = {"role": "assistant", "content": text or empty}
        thinking = [b for b in blocks if b.get("type") == "thinking" and js_trim(str(b.get("thinking", "")))]
        details = replayed_details(blocks)
        signature = thinking[0].get("thinkingSignature") if thinking else None
        # Replay data, when the server sent some, stands in for the readable reasoning.
        if details is None and signature in _REASONING_FIELDS:
            out[signature] = "\n".join(b["thinking"] for b in thinking)
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        if calls:
            out["tool_calls"] = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": js_stringify(b.get("arguments") or {})},
                }
                for b in calls
            ]
        if details is not None:
            out["reasoning_details"] = details
        if not out["content"] and not calls:
            return []  # nothing to say (reasoning alone): servers refuse an empty assistant turn
        return [out]
    if role == "toolResult":
        content = message["content"]
        images = images_of(content)
        text = text_of(content)
        # A tool message must say something: Pi's words stand in when the result has no text.
        if not js_trim(text):
            text = SEE_ATTACHED_IMAGE if images else NO_TOOL_OUTPUT
        wire = [{"role": "tool", "tool_call_id": message["toolCallId"], "content": text}]
        if images:
            # Tool messages cannot carry images here, so they follow as a user message.
            parts = [{"type": "text", "text": "Attached image(s) from tool result:"}]
            wire.append({"role": "user", "content": parts + [_image_part(b) for b in images]})
        return wire
    return []


def _stream_error_text(error: Any) -> str:
    """The text OpenAI's client gives an error chunk: its message, else the error as JSON."""
    message = error.get("message") if isinstance(error, Mapping) else None
    if js_truthy(message):
        return message if isinstance(message, str) else js_stringify(message)
    return js_stringify(error)


class Decoder:
    """Map chat.completion.chunk events onto the assistant message."""

    def __init__(self, builder: AssistantBuilder) -> None:
        self._builder = builder
        self._tools: dict[int, int] = {}  # provider tool index -> content index
        self._details: list[dict[str, Any]] = []  # reasoning_details so far, merged as they stream
        self.stop_reason: StopReason | None = None
        self.finished = False
        self.error: str | None = None
        self.abort_text = "Request was aborted"
        self.abort_closes_calls = True

    def incomplete(self) -> str | None:
        return None if self.stop_reason is not None else "Stream ended without finish_reason"

    def feed(self, event: SseEvent) -> None:
        if event.data.strip() == "[DONE]":
            self.finished = True
            return
        chunk = parse_json(event.data)
        if chunk is INVALID:
            raise ProviderStreamError(MALFORMED_EVENT)
        if not isinstance(chunk, dict):
            return  # Pi passes over data that is not an object
        if js_truthy(chunk.get("error")):
            raise ProviderStreamError(_stream_error_text(chunk["error"]))
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
        # Compatible servers name the reasoning stream differently; the first field with text wins,
        # and its name is kept as the block's signature so a replay sends the reasoning back in it.
        # An answer has one thinking and one text block, as Pi keeps it: reasoning or text that
        # resumes later grows the block it started.
        field = next((f for f in _REASONING_FIELDS if isinstance(delta.get(f), str) and delta[f]), None)
        if field is not None:
            index = b.only("thinking", thinkingSignature=field)
            b.add_thinking(index, delta[field])
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else ():
            if is_detail(detail):
                self._add_detail(detail)
        if isinstance(delta.get("content"), str) and delta["content"]:
            b.add_text(b.only("text"), delta["content"])
        for call in delta.get("tool_calls") or []:
            key = call.get("index", 0)
            function = call.get("function") or {}
            if key not in self._tools:
                opened: dict[str, Any] = {
                    "type": "toolCall",
                    "id": call.get("id") or "",
                    "name": "",
                    "arguments": {},
                }
                self._tools[key] = b.open_block(opened)
            index = self._tools[key]
            block = b.message["content"][index]
            if call.get("id"):
                block["id"] = call["id"]
            if function.get("name"):
                block["name"] = function["name"]
            if function.get("arguments"):
                b.add_arguments(index, function["arguments"])

    def _add_detail(self, detail: Mapping[str, Any]) -> None:
        """Keep a piece of replay data on the answer's thinking block (opened empty when the server sent
        no readable reasoning), stored as the whole list so far."""
        b = self._builder
        index = b.only("thinking", thinkingSignature="")
        append_detail(self._details, detail)
        b.message["content"][index]["thinkingSignature"] = serialize_details(self._details)

    def _finish(self, reason: str) -> None:
        self._builder.message["rawStopReason"] = reason
        for index in self._tools.values():
            self._builder.end_tool_call(index)
        self.stop_reason = _FINISH.get(reason, "error")
        if self.stop_reason == "error":
            self.error = f"Provider finish_reason: {reason}"

    def _usage(self, raw: Mapping[str, Any]) -> None:
        details = raw.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens")
        if cached is None:
            cached = raw.get("prompt_cache_hit_tokens", raw.get("cached_tokens"))
        cache_read = cached or 0
        cache_write = details.get("cache_write_tokens") or 0
        output_details = raw.get("completion_tokens_details") or {}
        self._builder.set_usage(
            {
                "input": max(0, (raw.get("prompt_tokens") or 0) - cache_read - cache_write),
                "output": raw.get("completion_tokens") or 0,
                "cacheRead": cache_read,
                "cacheWrite": cache_write,
                "reasoning": output_details.get("reasoning_tokens") or raw.get("reasoning_tokens") or 0,
                "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
        )
