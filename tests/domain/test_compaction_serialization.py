"""The transcript a summarizer reads."""

from __future__ import annotations

from compaction_app.domain.serialization import serialize_conversation


def test_roles_and_tool_calls() -> None:
    messages = [
        {"role": "system", "content": "secret system prompt"},
        {"role": "user", "content": [{"type": "text", "text": "Fix "}, {"type": "text", "text": "it"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "On it."},
                {"type": "text", "text": "Reading."},
                {"type": "toolCall", "name": "read", "arguments": {"path": "a.py", "limit": 1.0, "2": "x"}},
                {"type": "toolCall", "name": "bash", "arguments": {"command": "ls", "timeout": 1e5}},
            ],
        },
        {"role": "toolResult", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": []},
    ]
    assert serialize_conversation(messages) == (
        "[User]: Fix it\n\n[Assistant]: On it.\nReading.\n\n"
        '[Assistant tool calls]: read(2="x", path="a.py", limit=1); bash(command="ls", timeout=100000)\n\n'
        "[Tool result]: ok"
    )


def test_empty_text_block_still_emits_assistant_line() -> None:
    messages = [{"role": "assistant", "content": [{"type": "text", "text": ""}]}]
    assert serialize_conversation(messages) == "[Assistant]: "


def test_long_tool_result_is_truncated_without_splitting_a_surrogate_pair() -> None:
    text = "a" * 1999 + "\U0001f600" + "b" * 10  # the emoji occupies units 1999-2000
    out = serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": text}]}])
    # The count is measured from the 2000-unit limit even when one unit fewer was kept.
    assert out == "[Tool result]: " + "a" * 1999 + "\n\n[... 11 more characters truncated]"


def test_tool_result_at_the_limit_is_kept_whole() -> None:
    text = "x" * 2000
    out = serialize_conversation([{"role": "toolResult", "content": text}])
    assert out == "[Tool result]: " + text
