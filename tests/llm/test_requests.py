"""What goes on the wire: headers, request options and Pi messages in each provider's format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.llm import (
    ProviderConfig,
    ToolSpec,
    anthropic,
    complete,
    fit_max_tokens,
    openai,
    stream_completion,
)
from providers.llm import testserver as ts
from providers.llm.compat import validate_compat
from providers.llm.messages import prepare_messages
from tests.llm.conftest import user

SYSTEM = "You are a context summarization assistant."
PIXEL = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
TOOLS = [ToolSpec(name="read", description="Read a file", parameters={"type": "object", "properties": {}})]


def conversation(config: ProviderConfig) -> list[dict[str, Any]]:
    """A history whose answers came from ``config``'s own model (its thinking is replayed)."""
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}
    assistant = {
        "role": "assistant",
        "api": config.api,
        "provider": config.provider,
        "model": config.model_id,
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
    complete(openai_config, system=SYSTEM, messages=conversation(openai_config), max_tokens=2048, tools=TOOLS)

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-secret"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["store"] is False  # detected for a host that is none of the non-standard ones
    assert body["max_completion_tokens"] == 2048
    assert "user" not in body and "x-session-id" not in request.headers
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
                    "function": {"name": "read", "arguments": '{"path":"a.png"}'},
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
    complete(anthropic_config, system=SYSTEM, messages=conversation(anthropic_config), cache=False)

    (request,) = server.requests
    assert request.path == "/v1/messages?beta=true"
    assert request.headers["x-api-key"] == "sk-ant-test-secret"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.body
    assert body["system"] == [{"type": "text", "text": SYSTEM}]
    assert body["max_tokens"] == anthropic_config.max_output_tokens
    assert body["stream"] is True
    assert "metadata" not in body
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
                    "is_error": False,
                }
            ],
        },
        {"role": "user", "content": "And now?"},
    ]


def test_anthropic_cache_marks_system_last_tool_and_last_user_turn(
    server: ts.ProviderServer, anthropic_config: ProviderConfig
) -> None:
    server.enqueue(ts.reply())
    tools = [*TOOLS, ToolSpec(name="ls", description="List", parameters={"type": "object"})]
    stream_completion(
        anthropic_config, system=SYSTEM, messages=[user("one"), user("two")], max_tokens=100, tools=tools
    )
    body = server.requests[0].body
    assert body["max_tokens"] == 100
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1]
    assert [t.get("cache_control") for t in body["tools"]] == [None, {"type": "ephemeral"}]
    assert all(t["eager_input_streaming"] is True for t in body["tools"])


def test_anthropic_cache_skips_a_last_turn_that_is_not_the_users(anthropic_config: ProviderConfig) -> None:
    done = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}
    _, _, body = anthropic.build_request(
        anthropic_config, system=None, messages=[user("one"), done], tools=None, max_tokens=1, session_id="s"
    )
    assert "cache_control" not in json.dumps(body)


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


def test_no_routing_fields_are_sent_unless_the_host_takes_them(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.reply())
    complete(config, system=None, messages=[user("c")], session_id="sess-1")
    (request,) = server.requests
    assert "sess-1" not in json.dumps(request.body) and "sess-1" not in json.dumps(dict(request.headers))


def _openai(base_url: str, provider: str = "custom", **kwargs: Any) -> dict[str, Any]:
    config = ProviderConfig(
        api="openai-completions",
        provider=provider,
        base_url=base_url,
        model_id="m",
        api_key="k",
        context_window=1000,
        max_output_tokens=100,
        **kwargs,
    )
    _, _, body = openai.build_request(
        config,
        system="S",
        messages=[user("hi")],
        tools=None,
        max_tokens=100,
        session_id="sess-1",
        thinking_level="medium",
    )
    return body


def test_openai_compat_is_detected_from_the_host_as_pi_detects_it() -> None:
    official = _openai("https://api.openai.com/v1", reasoning=True)
    assert official["messages"][0]["role"] == "developer"
    assert official["store"] is False and official["max_completion_tokens"] == 100
    assert official["prompt_cache_key"] == "sess-1"
    assert official["reasoning_effort"] == "medium"
    deepseek = _openai("https://api.deepseek.com/v1", reasoning=True)
    assert deepseek["messages"][0]["role"] == "system"
    assert "store" not in deepseek and deepseek["max_tokens"] == 100
    assert "max_completion_tokens" not in deepseek and "prompt_cache_key" not in deepseek
    grok = _openai("https://api.x.ai/v1", reasoning=True)
    assert "reasoning_effort" not in grok and "store" not in grok
    local = _openai("http://127.0.0.1:8080/v1")
    assert local["store"] is False and "reasoning_effort" not in local and "prompt_cache_key" not in local


def test_configured_compat_wins_over_detection() -> None:
    compat = {"maxTokensField": "max_tokens", "supportsStore": False, "supportsUsageInStreaming": False}
    body = _openai("http://127.0.0.1:8080/v1", compat=compat)
    assert body["max_tokens"] == 100 and "store" not in body and "stream_options" not in body


def test_unknown_or_mistyped_compat_settings_are_refused() -> None:
    assert validate_compat({"maxTokensField": "max_tokens"}) == {"maxTokensField": "max_tokens"}
    with pytest.raises(ValueError, match="Unknown compat setting 'bogus'"):
        validate_compat({"bogus": True})
    with pytest.raises(ValueError, match="'supportsStore' must be true or false"):
        validate_compat({"supportsStore": "no"})
    with pytest.raises(ValueError, match="'maxTokensField' must be one of"):
        validate_compat({"maxTokensField": "tokens"})


@pytest.mark.parametrize(
    ("window", "estimate", "cap", "sent"),
    [
        (200000, 1000, 32000, 32000),  # plenty of room: the model's own limit
        (128000, 100000, 32000, 23904),  # the fixed 4,096 margin once the 15% one leaves too little
        (4000, 900, 500, 1),  # a window smaller than the margin: one token, as Pi sends
    ],
)
def test_output_cap_fits_the_window_as_pi_fits_it(window: int, estimate: int, cap: int, sent: int) -> None:
    assert fit_max_tokens(window, estimate, cap) == sent


def test_api_key_is_hidden_from_repr(config: ProviderConfig) -> None:
    assert "secret" not in repr(config)


def test_a_text_only_model_reads_one_note_for_each_run_of_pictures(config: ProviderConfig) -> None:
    picture = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    user_note = "(image omitted: model does not support images)"
    tool_note = "(tool image omitted: model does not support images)"
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                picture,
                picture,
                {"type": "text", "text": "and"},
                picture,
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": user_note}, picture]},
        {"role": "user", "content": "plain text stays"},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
            "stopReason": "toolUse",
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [picture],
            "isError": False,
        },
    ]
    sent = prepare_messages(messages, accepts_images=False)
    assert [b.get("text") for b in sent[0]["content"]] == ["Look:", user_note, "and", user_note]
    assert sent[1]["content"] == [{"type": "text", "text": user_note}]  # the note already stands there
    assert sent[2]["content"] == "plain text stays"
    assert sent[4]["content"] == [{"type": "text", "text": tool_note}]
    assert prepare_messages(messages)[0]["content"][1] == picture  # a model that sees keeps them
