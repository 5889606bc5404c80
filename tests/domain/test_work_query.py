"""The terms of a search by work and what one entry says about tools: pure, no database."""

from __future__ import annotations

import re

import pytest

from pitree.tool_uses import ToolCall, ToolResult, UserCommand, shown_path, tool_facts
from pitree.work_query import WorkQueryError, glob_regex, parse_work_query


def test_terms_are_taken_out_and_the_rest_is_text() -> None:
    query = parse_work_query('fix path:src/ tool:edit the cmd:"npm test" parser http://x.test a:b')
    assert [(p.text, p.match, p.absolute) for p in query.paths] == [("src/", "prefix", False)]
    assert query.tools == ["edit"] and query.commands == ["npm test"]
    assert query.text == "fix the parser http://x.test a:b"
    assert parse_work_query("PATH:/w/a.py").paths[0].match == "exact"
    assert parse_work_query("path:~/notes.md").paths[0].absolute
    assert not parse_work_query("just words").has_work


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("*.py", ["a.py", "src/deep/b.py"], ["a.pyc", "a_py"]),
        ("src/*.py", ["src/a.py"], ["src/x/a.py", "a.py"]),
        ("src/**/test_*.py", ["src/test_a.py", "src/x/y/test_b.py"], ["src/x/atest_b.py", "lib/test_a.py"]),
        ("src/**", ["src/a", "src/x/y"], ["srcx/a"]),
        ("file?.txt", ["file1.txt"], ["file12.txt", "file/.txt"]),
        ("[ab].c", ["a.c", "x/b.c"], ["c.c"]),
        ("[!ab].c", ["c.c"], ["a.c"]),
        ("a+b (1).md", ["a+b (1).md"], ["aab (1).md"]),
    ],
)
def test_globs(glob: str, yes: list[str], no: list[str]) -> None:
    pattern = re.compile(glob_regex(glob))
    assert all(pattern.search(p) for p in yes)
    assert not any(pattern.search(p) for p in no)


@pytest.mark.parametrize("q", ["path:", "-tool:bash", "tool:a/b", "path:[x", "path:a[]", "path:[z-a].py"])
def test_bad_terms(q: str) -> None:
    with pytest.raises(WorkQueryError):
        parse_work_query(q)


def test_what_an_entry_says_about_tools() -> None:
    call = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "@src/a.py", "edits": []}}
    bash = {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "ls"}}
    grep = {"type": "toolCall", "id": "c3", "name": "grep", "arguments": {"pattern": "x", "path": "src"}}
    assistant = {
        "type": "message",
        "id": "a",
        "message": {"role": "assistant", "content": [call, bash, grep]},
    }
    assert tool_facts(assistant) == (
        [
            ToolCall("c1", "edit", "@src/a.py", ""),
            ToolCall("c2", "bash", "", "ls"),
            ToolCall("c3", "grep", "", ""),
        ],
        None,
        None,
    )
    result = {
        "type": "message",
        "id": "r",
        "message": {"role": "toolResult", "toolCallId": "c1", "isError": True},
    }
    assert tool_facts(result) == ([], ToolResult("c1", True), None)
    typed = {"type": "message", "id": "b", "message": {"role": "bashExecution", "command": "git status"}}
    assert tool_facts(typed) == ([], None, UserCommand("git status"))
    assert tool_facts({"type": "label", "id": "l"}) == ([], None, None)
    assert shown_path("@src/a.py", "/w") == ("src/a.py", "/w/src/a.py")
    assert shown_path("/elsewhere/b.py", "/w") == ("/elsewhere/b.py", "/elsewhere/b.py")
    assert shown_path("../w/c.py", "/w/") == ("c.py", "/w/c.py")


def test_what_no_database_column_holds_is_replaced() -> None:
    call = {"type": "toolCall", "id": "c\x001", "name": "bash", "arguments": {"command": "echo \ud800\x00"}}
    value = {"type": "message", "id": "a", "message": {"role": "assistant", "content": [call]}}
    assert tool_facts(value)[0] == [ToolCall("c 1", "bash", "", "echo   ")]
