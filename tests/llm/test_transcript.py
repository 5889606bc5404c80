"""The prompt, updates and tools a request carries, from Pi 1.6's system messages."""

from __future__ import annotations

from typing import Any

from providers.llm import ProviderConfig, anthropic, openai
from providers.llm.transcript import split_transcript

READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object", "required": ["path"],
        "properties": {"path": {"type": "string"}}}}  # fmt: skip
BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object",
        "properties": {"command": {"type": "string"}}}}  # fmt: skip
WRITE = {"name": "write", "description": "Write a file", "parameters": {"anyOf": [{"type": "object"}]}}

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "", "toolsAdded": [READ, BASH], "timestamp": 1,
     "sections": {"preamble": "You help.", "empty": "", "cwd": "<cwd>/r</cwd>"}},
    {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 2},
    {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "stopReason": "stop",
     "timestamp": 3},
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}], "timestamp": 4,
     "sections": {"cwd": None, "preamble": "You help a lot."}, "toolsRemoved": [{"name": "read"}],
     "toolsAdded": [WRITE]},
    {"role": "user", "content": "again", "timestamp": 5},
]  # fmt: skip


def test_collapsed_prompt_is_content_then_sections_and_tools_are_the_current_set() -> None:
    first = split_transcript(TRANSCRIPT[:3])
    assert first.system == "You help.\n\n<cwd>/r</cwd>"
    assert [t.name for t in first.tools] == ["read", "bash"]
    assert [m["role"] for m in first.messages] == ["user", "assistant"]

    later = split_transcript(TRANSCRIPT)
    # Later content is appended, a section changed in place keeps its position, a removed one goes.
    assert later.system == "Be brief.\n\nYou help a lot."
    assert [t.name for t in later.tools] == ["bash", "write"]
    assert [m["role"] for m in later.messages] == ["user", "assistant", "user"]


def test_in_place_updates_name_each_changed_section() -> None:
    result = split_transcript(TRANSCRIPT, in_place=True)
    assert result.system == "You help.\n\n<cwd>/r</cwd>"
    update = result.messages[2]
    assert update["role"] == "system"
    assert update["content"].startswith("Be brief.")
    assert '"cwd"' in update["content"] and '"preamble"' in update["content"]
    assert "You help a lot." in update["content"]


def _config(api: Any) -> ProviderConfig:
    return ProviderConfig(api=api, provider="p", base_url="http://127.0.0.1:1", model_id="m", api_key="k",
                          context_window=1000, max_output_tokens=100)  # fmt: skip


def test_tool_definitions_in_each_wire_format() -> None:
    result = split_transcript(TRANSCRIPT)
    _, _, body = openai.build_request(
        _config("openai-completions"), system=result.system, messages=result.messages, tools=result.tools,
        max_tokens=None, session_id="s",
    )  # fmt: skip
    assert body["messages"][0] == {"role": "system", "content": "Be brief.\n\nYou help a lot."}
    assert body["tools"][0] == {"type": "function", "function": BASH}
    _, _, body = anthropic.build_request(
        _config("anthropic-messages"), system=result.system, messages=result.messages, tools=result.tools,
        max_tokens=None, session_id="s", cache=False,
    )  # fmt: skip
    assert body["system"] == [{"type": "text", "text": "Be brief.\n\nYou help a lot."}]
    # The API refuses root combinators: the schema is reduced to an object with properties.
    assert body["tools"][1]["input_schema"] == {"type": "object", "properties": {}, "required": []}
    in_place = split_transcript(TRANSCRIPT, in_place=True)
    _, _, body = openai.build_request(
        _config("openai-completions"), system=in_place.system, messages=in_place.messages,
        tools=in_place.tools, max_tokens=None, session_id="s",
    )  # fmt: skip
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "system", "user"]
