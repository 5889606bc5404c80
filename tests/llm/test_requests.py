"""What goes on the wire: headers, request options and Pi messages in each provider's format."""

from __future__ import annotations

import json
from typing import Any

from piweb.llm import ProviderConfig, ToolSpec, complete
from piweb.llm import testserver as ts
from tests.llm.conftest import user

SYSTEM = "You are a context summarization assistant."
PIXEL = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
TOOLS = [ToolSpec(name="read", description="Read a file", parameters={"type": "object", "properties": {}})]


def conversation() -> list[dict[str, Any]]:
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}
    assistant = {
        "role": "assistant",
        "api": "x",
        "provider": "x",
        "model": "x",
        "usage": usage,
        "timestamp": 2,
    }
    return [
        {"role": "user", "content": [{"type": "text", "text": "What is in a.png?"}, PIXEL], "timestamp": 1},
        {
            **assistant,
            "content": [
                {"type": "thinking", "thinking": "Look at it.", "thinkingSignature": "sig-1"},
                {"type": "text", "text": "Reading."},
                {"type": "toolCall", "id": "call_7", "name": "read", "arguments": {"path": "a.png"}},
            ],
            "stopReason": "toolUse",
        },
        {
            "role": "toolResult",
            "toolCallId": "call_7",
            "toolName": "read",
            "content": [{"type": "text", "text": "binary image"}, PIXEL],
            "isError": False,
            "timestamp": 3,
        },
        {
            **assistant,
            "content": [{"type": "text", "text": "half"}],
            "stopReason": "error",
            "errorMessage": "boom",
        },
        {"role": "user", "content": "And now?", "timestamp": 4},
    ]


def test_openai_request(server: ts.ProviderServer, openai_config: ProviderConfig) -> None:
    server.enqueue(ts.reply())
    complete(openai_config, system=SYSTEM, messages=conversation(), max_tokens=2048, tools=TOOLS)

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-secret"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 2048
    assert body["tools"][0]["function"]["name"] == "read"
    image_url = {"url": "data:image/png;base64,iVBORw0KGgo="}
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in a.png?"},
                {"type": "image_url", "image_url": image_url},
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.png"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "binary image"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": image_url},
            ],
        },
        {"role": "user", "content": "And now?"},
    ]


def test_anthropic_request_without_cache(server: ts.ProviderServer, anthropic_config: ProviderConfig) -> None:
    server.enqueue(ts.reply())
    complete(anthropic_config, system=SYSTEM, messages=conversation(), cache=False)

    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test-secret"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.body
    assert body["system"] == [{"type": "text", "text": SYSTEM}]
    assert body["max_tokens"] == anthropic_config.max_output_tokens
    assert body["stream"] is True
    assert "cache_control" not in json.dumps(body)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is in a.png?"}, image]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look at it.", "signature": "sig-1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_7", "name": "read", "input": {"path": "a.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_7",
                    "content": [{"type": "text", "text": "binary image"}, image],
                }
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "And now?"}]},
    ]


def test_anthropic_cache_marks_system_and_last_user_turn(
    server: ts.ProviderServer, anthropic_config: ProviderConfig
) -> None:
    server.enqueue(ts.reply())
    complete(anthropic_config, system=SYSTEM, messages=[user("one"), user("two")], max_tokens=100, cache=True)
    body = server.requests[0].body
    assert body["max_tokens"] == 100
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1]


def test_tool_call_round_trip(server: ts.ProviderServer, config: ProviderConfig) -> None:
    arguments = {"command": 'echo "hi" && ls -la ~/é', "timeout": 1.5, "env": {"A": None}}
    server.enqueue(ts.tool_call("bash", arguments, id="call_9"), ts.reply("done"))
    first = complete(config, system=None, messages=[user("run it")])
    result = {
        "role": "toolResult",
        "toolCallId": "call_9",
        "toolName": "bash",
        "content": [{"type": "text", "text": "hi"}],
        "isError": True,
        "timestamp": 5,
    }
    complete(config, system=None, messages=[user("run it"), first, result])

    sent = server.requests[1].body["messages"]
    if config.api == "openai-completions":
        call = sent[1]["tool_calls"][0]
        assert (call["id"], call["function"]["name"]) == ("call_9", "bash")
        assert json.loads(call["function"]["arguments"]) == arguments
        assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "hi"}
    else:
        assert sent[1]["content"] == [
            {"type": "tool_use", "id": "call_9", "name": "bash", "input": arguments}
        ]
        (block,) = sent[2]["content"]
        assert block["tool_use_id"] == "call_9" and block["is_error"] is True


def test_unanswered_tool_calls_get_an_error_result(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.tool_call("ls", {}, id="call_1"), ts.reply())
    first = complete(config, system=None, messages=[user("list")])
    complete(config, system=None, messages=[user("list"), first, user("never mind")])
    sent = server.requests[1].body["messages"]
    if config.api == "openai-completions":
        assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "No result provided"}
    else:
        assert sent[2]["content"][0]["tool_use_id"] == "call_1"
        assert sent[2]["content"][0]["is_error"] is True


def test_each_call_gets_a_fresh_routing_id_unless_given(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.reply(), ts.reply(), ts.reply())
    complete(config, system=None, messages=[user("a")])
    complete(config, system=None, messages=[user("b")])
    complete(config, system=None, messages=[user("c")], session_id="sess-1")
    ids = [r.headers["x-session-id"] for r in server.requests]
    assert ids[0] != ids[1]
    assert ids[2] == "sess-1"
    body = server.requests[2].body
    assert (body.get("user") or body.get("metadata", {}).get("user_id")) == "sess-1"


def test_api_key_is_hidden_from_repr(config: ProviderConfig) -> None:
    assert "secret" not in repr(config)
