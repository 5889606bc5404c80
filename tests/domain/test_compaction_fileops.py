"""File operations carried into summaries: which calls count, how lists are ordered and printed."""

from __future__ import annotations

from compaction_app.domain.fileops import (
    FileOps,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
)


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"type": "toolCall", "id": name, "name": name, "arguments": arguments}


def test_only_read_write_edit_with_string_path_count() -> None:
    ops = FileOps()
    message = {
        "role": "assistant",
        "content": [
            _call("read", path="a.py"),
            _call("write", path="b.py"),
            _call("edit", path="c.py"),
            _call("read", path=42),
            _call("read", path=""),
            _call("read"),
            _call("grep", path="d.py"),
            _call("bash", command="cat e.py"),
        ],
    }
    extract_file_ops_from_message(message, ops)
    assert ops.as_dict() == {"read": ["a.py"], "written": ["b.py"], "edited": ["c.py"]}


def test_nested_calls_of_a_tool_result_count() -> None:
    ops = FileOps()
    result = {
        "role": "toolResult",
        "content": [],
        "nestedCalls": {"calls": [{"name": "edit", "arguments": {"path": "n.py"}}, {"name": "write"}]},
    }
    extract_file_ops_from_message(result, ops)
    assert ops.as_dict() == {"read": [], "written": [], "edited": ["n.py"]}


def test_modified_files_leave_the_read_list_and_sort_by_utf16_units() -> None:
    ops = FileOps()
    ops.seed({"readFiles": ["z.md", "shared.py", "\U0001f600.txt", "\uffff.txt"], "modifiedFiles": ["z.md"]})
    ops.written.add("B.py")
    read, modified = compute_file_lists(ops)
    # The emoji's surrogate (0xD83D) sorts before U+FFFF, as JavaScript sorts strings.
    assert read == ["shared.py", "\U0001f600.txt", "\uffff.txt"]
    assert modified == ["B.py", "z.md"]


def test_seed_ignores_lists_that_are_not_arrays() -> None:
    ops = FileOps()
    ops.seed({"readFiles": "a.py", "modifiedFiles": None})
    assert compute_file_lists(ops) == ([], [])


def test_format_lists() -> None:
    assert format_file_operations([], []) == ""
    assert format_file_operations(["r"], []) == "\n\n<read-files>\nr\n</read-files>"
    assert format_file_operations(["r"], ["m1", "m2"]) == (
        "\n\n<read-files>\nr\n</read-files>\n\n<modified-files>\nm1\nm2\n</modified-files>"
    )
