"""Successful turns over both wire formats: content, events, usage and stop reasons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from providers.llm import (
    Done,
    ProviderConfig,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    complete,
    stream_completion,
)
from providers.llm import testserver as ts
from tests.llm.conftest import user


def test_text_reply_streams_deltas_and_returns_pi_assistant_message(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.reply("The tree has three branches.", thinking="Count the leaves first."))
    events: list[StreamEvent] = []

    message = stream_completion(
        config, system="Be brief.", messages=[user("How many?")], on_event=events.append
    )

    assert message["role"] == "assistant"
    assert message["api"] == config.api
    assert message["provider"] == config.provider
    assert message["model"] == config.model_id
    assert message["stopReason"] == "stop"
    assert "errorMessage" not in message
    assert isinstance(message["timestamp"], int) and message["timestamp"] > 1_600_000_000_000
    thinking, text = message["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Count the leaves first."
    assert text == {"type": "text", "text": "The tree has three branches."}
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "The tree has three branches."
    assert "".join(e.delta for e in events if isinstance(e, ThinkingDelta)) == "Count the leaves first."
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert events[-1] == Done(message)


def test_anthropic_thinking_keeps_its_signature(
    server: ts.ProviderServer, anthropic_config: ProviderConfig
) -> None:
    server.enqueue(ts.reply("ok", thinking="hmm"))
    message = complete(anthropic_config, system=None, messages=[user("hi")])
    assert message["content"][0]["thinkingSignature"] == "sig"


ARGUMENTS = {
    "path": 'src/é/"quoted" file.py',
    "edits": [{"old": "a\nb", "new": "{}[]\\"}, {"old": "", "new": None}],
    "count": 3,
    "flag": True,
}


def test_tool_call_arguments_survive_the_stream(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.tool_call("edit", ARGUMENTS, id="toolu_42", text="Editing now."))
    events: list[StreamEvent] = []

    message = stream_completion(config, system=None, messages=[user("fix it")], on_event=events.append)

    assert message["stopReason"] == "toolUse"
    text, call = message["content"]
    assert text == {"type": "text", "text": "Editing now."}
    assert call == {"type": "toolCall", "id": "toolu_42", "name": "edit", "arguments": ARGUMENTS}
    fragments = [e.arguments_delta for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) > 1
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.tool_call for e in ends] == [call]


def test_several_tool_calls_in_one_turn(server: ts.ProviderServer, config: ProviderConfig) -> None:
    calls = [
        {"id": "c1", "name": "read", "arguments": {"path": "a"}},
        {"id": "c2", "name": "ls", "arguments": {}},
    ]
    server.enqueue(ts.reply("", tool_calls=calls))
    message = complete(config, system=None, messages=[user("look")])
    assert [(b["id"], b["name"], b["arguments"]) for b in message["content"]] == [
        ("c1", "read", {"path": "a"}),
        ("c2", "ls", {}),
    ]


def test_openai_usage_separates_cached_prompt_tokens(
    server: ts.ProviderServer, openai_config: ProviderConfig
) -> None:
    server.enqueue(ts.reply(usage={"input": 1000, "cacheRead": 300, "output": 50}))
    usage = complete(openai_config, system=None, messages=[user("hi")])["usage"]
    assert {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {
        "input": 1000,
        "output": 50,
        "cacheRead": 300,
        "cacheWrite": 0,
        "totalTokens": 1350,
    }
    assert usage["reasoning"] == 0
    # Priced at the model's rates, which are zero here; the total is the client's own, as in Pi.
    assert usage["cost"] == {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "total": 0,
        "totalFromProvider": False,
    }


def test_usage_is_priced_at_the_models_rates(server: ts.ProviderServer, config: ProviderConfig) -> None:
    priced = replace(config, cost={"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75})
    server.enqueue(ts.reply(usage={"input": 1000, "cacheRead": 2000, "output": 100}))
    message = complete(priced, system=None, messages=[user("hi")])
    cost = message["usage"]["cost"]
    assert cost["input"] == pytest.approx(0.003) and cost["output"] == pytest.approx(0.0015)
    assert cost["cacheRead"] == pytest.approx(0.0006)
    assert cost["total"] == pytest.approx(0.0051)
    assert message["rawStopReason"] == ("stop" if config.api == "openai-completions" else "end_turn")
    assert isinstance(message["durationMs"], int) and message["durationMs"] >= 0


def test_anthropic_usage_counts_cache_reads_and_writes(
    server: ts.ProviderServer, anthropic_config: ProviderConfig
) -> None:
    server.enqueue(ts.reply(usage={"input": 12, "cacheRead": 9000, "cacheWrite": 400, "output": 77}))
    usage = complete(anthropic_config, system=None, messages=[user("hi")])["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (12, 77, 9000, 400)
    assert usage["totalTokens"] == 12 + 77 + 9000 + 400


@pytest.mark.parametrize(
    ("scripted", "expected"), [("stop", "stop"), ("length", "length"), ("toolUse", "toolUse")]
)
def test_stop_reasons_map_to_pi(
    server: ts.ProviderServer, config: ProviderConfig, scripted: str, expected: str
) -> None:
    server.enqueue(ts.reply("partial", stop=scripted))
    assert complete(config, system=None, messages=[user("go")])["stopReason"] == expected


def test_length_stop_with_nothing_written(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.reply("", stop="length", usage={"input": 199_000, "output": 0}))
    message = complete(config, system=None, messages=[user("go")])
    assert message["stopReason"] == "length"
    assert message["content"] == []
    assert (message["usage"]["input"], message["usage"]["output"]) == (199_000, 0)


def test_silent_overflow_reports_the_input_the_provider_counted(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.reply("fine", usage={"input": config.context_window + 5000, "output": 3}))
    message = complete(config, system=None, messages=[user("go")])
    assert message["stopReason"] == "stop"
    assert message["usage"]["input"] == config.context_window + 5000


def test_usage_near_the_compaction_threshold(server: ts.ProviderServer, config: ProviderConfig) -> None:
    near = config.context_window - 16384 - 1
    server.enqueue(ts.reply("ok", usage={"input": near - 500, "cacheRead": 500, "output": 10}))
    usage = complete(config, system=None, messages=[user("go")])["usage"]
    assert usage["input"] + usage["cacheRead"] == near
