"""A tool call's arguments read as Pi reads them: the parser's own message for text that is not JSON,
and what a call cut off mid-stream shows so far."""

from __future__ import annotations

import pytest

from pitree.jsonerrors import json_parse_error
from providers.llm.arguments import parse_tool_call_arguments, partial_tool_call_arguments


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Unexpected end of JSON input"),
        ("{", "Expected property name or '}' in JSON at position 1 (line 1 column 2)"),
        ('{"path": "calc.py", "off', "Unterminated string in JSON at position 24 (line 1 column 25)"),
        ('{"a"', "Expected ':' after property name in JSON at position 4 (line 1 column 5)"),
        ('{"a":1,', "Expected double-quoted property name in JSON at position 7 (line 1 column 8)"),
        ("[1.", "Unterminated fractional number in JSON at position 3 (line 1 column 4)"),
        ('{"a":-', "No number after minus sign in JSON at position 6 (line 1 column 7)"),
        ("{}x", "Unexpected non-whitespace character after JSON at position 2 (line 1 column 3)"),
        ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
        ('{\n"a":\n1 2}', "Expected ',' or '}' after property value in JSON at position 9 (line 3 column 3)"),
        ('{"a": 1}', None),
    ],
)
def test_json_errors_read_as_nodes(text: str, message: str | None) -> None:
    assert json_parse_error(text) == message


def test_a_finished_call_that_is_not_json_keeps_the_message_and_the_text() -> None:
    text = '{"path": "calc.py", "off'
    assert parse_tool_call_arguments(text) == (
        {},
        "Unterminated string in JSON at position 24 (line 1 column 25)\n\nReceived arguments:\n" + text,
    )
    assert (
        parse_tool_call_arguments("[1]")[1]
        == "Tool arguments must be a JSON object\n\nReceived arguments:\n[1]"
    )
    # Raw control characters in strings are repaired, not refused.
    assert parse_tool_call_arguments('{"a": "x\ny"}') == ({"a": "x\ny"}, None)
    assert parse_tool_call_arguments("  ") == ({}, None)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{"path": "calc.py", "off', {"path": "calc.py"}),
        ('{"path": "ca', {"path": "ca"}),
        ('{"path": "calc.py", "offset": 1', {"path": "calc.py", "offset": 1}),
        ('{"a": [1, {"b": tr', {"a": [1, {"b": True}]}),
        ('{"a": 1e', {"a": 1}),
        ('{"a": "\\u00', {"a": ""}),
        ("[1, 2", {}),
    ],
)
def test_a_call_cut_off_shows_what_streamed(text: str, shown: dict[str, object]) -> None:
    assert partial_tool_call_arguments(text) == shown
