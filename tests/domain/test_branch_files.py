"""The files of a branch (pitree.files): what Pi's read, edit, write and bash calls did, per file."""

from __future__ import annotations

import pickle
from typing import Any

from pitree.files import FilesWalk, branch_files, line_diff, normalize_path

CWD = "/home/ana/project"


class Branch:
    """Builds a branch of Pi entries: each tool call is an assistant entry followed by its result."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.calls = 0

    def _add(self, message: dict[str, Any]) -> str:
        entry_id = f"e{len(self.entries)}"
        parent = self.entries[-1]["id"] if self.entries else None
        self.entries.append({"type": "message", "id": entry_id, "parentId": parent, "message": message})
        return entry_id

    def call(
        self, name: str, args: dict[str, Any], *, error: bool = False, result: str = "ok", details: Any = None
    ) -> str:
        """Add the call and its result; return the result's entry id."""
        self.calls += 1
        call_id = f"call{self.calls}"
        block = {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
        self._add({"role": "assistant", "content": [block], "stopReason": "toolUse"})
        result_message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": result}],
            "isError": error,
        }
        if details is not None:
            result_message["details"] = details
        return self._add(result_message)

    def files(self) -> Any:
        return branch_files(self.entries, CWD)


def test_a_file_written_then_edited_in_both_shapes_has_its_content_and_counts() -> None:
    branch = Branch()
    wrote = branch.call("write", {"path": "app.py", "content": "a = 1\nb = 2\nc = 3\n"})
    new_shape = branch.call(
        "edit", {"path": "app.py", "edits": [{"oldText": "b = 2", "newText": "b = 20\nb2 = 21"}]}
    )
    old_shape = branch.call("edit", {"path": f"{CWD}/app.py", "oldText": "c = 3\n", "newText": ""})
    found = branch.files()
    [touch] = found.files
    assert touch.path == "app.py" and touch.absolute == f"{CWD}/app.py"
    assert touch.kinds == {"created", "edited"}
    assert touch.content == "a = 1\nb = 20\nb2 = 21\n"
    assert touch.content_entry_id == old_shape
    assert [(c.entry_id, c.kind, c.added, c.removed) for c in touch.changes] == [
        (wrote, "created", 3, 0),
        (new_shape, "edited", 2, 1),
        (old_shape, "edited", 0, 1),
    ]
    assert (touch.added, touch.removed) == (5, 2)
    assert touch.changes[1].hunks[0].lines == [" a = 1", "-b = 2", "+b = 20", "+b2 = 21", " c = 3"]
    assert touch.changes[1].hunks[0].old_start == 1 and touch.changes[1].numbered


def test_a_failed_edit_is_not_a_change_and_leaves_the_content() -> None:
    branch = Branch()
    branch.call("write", {"path": "x.txt", "content": "one\n"})
    branch.call(
        "edit",
        {"path": "x.txt", "edits": [{"oldText": "zzz", "newText": "y"}]},
        error=True,
        result="Could not find",
    )
    [touch] = branch.files().files
    assert [c.kind for c in touch.changes] == ["created"]
    assert touch.content == "one\n"


def test_an_edit_of_a_file_never_read_whole_has_unknown_content_and_counts_from_pis_patch() -> None:
    branch = Branch()
    patch = "--- a/lib.py\n+++ b/lib.py\n@@ -10,3 +10,3 @@\n ctx\n-old\n+new\n ctx\n"
    edited = branch.call(
        "edit", {"path": "lib.py", "edits": [{"oldText": "old", "newText": "new"}]}, details={"patch": patch}
    )
    branch.call("read", {"path": "lib.py", "offset": 5, "limit": 10}, result="part")
    [touch] = branch.files().files
    assert touch.content is None and not touch.content_known
    assert touch.kinds == {"edited", "read"}
    [change] = touch.changes
    assert (change.entry_id, change.added, change.removed) == (edited, 1, 1)
    assert change.hunks[0].old_start == 10 and change.numbered


def test_without_a_patch_an_unknown_file_edit_counts_its_texts_without_line_numbers() -> None:
    branch = Branch()
    branch.call("edit", {"path": "lib.py", "oldText": "a\nb", "newText": "a\nc\nd"})
    [change] = branch.files().files[0].changes
    assert (change.added, change.removed, change.numbered) == (2, 1, False)


def test_a_whole_read_makes_the_content_known_and_a_later_edit_applies_to_it() -> None:
    branch = Branch()
    read = branch.call("read", {"path": "README.md"}, result="# Title\ntext\n")
    branch.call("edit", {"path": "README.md", "edits": [{"oldText": "text", "newText": "more text"}]})
    [touch] = branch.files().files
    assert touch.kinds == {"read", "edited"} and touch.reads == [read]
    assert touch.content == "# Title\nmore text\n"
    # A truncated read says so in its details: not the whole file.
    branch = Branch()
    branch.call(
        "read", {"path": "big.log"}, result="first lines", details={"truncation": {"truncated": True}}
    )
    assert branch.files().files[0].content is None


def test_bash_commands_are_listed_and_counted_against_known_content() -> None:
    branch = Branch()
    branch.call("write", {"path": "a.txt", "content": "x\n"})
    ran = branch.call("bash", {"command": "git commit -am wip"})
    branch.call("bash", {"command": "false"}, error=True)
    found = branch.files()
    first = found.commands[0]
    assert (first.entry_id, first.command, first.is_error) == (ran, "git commit -am wip", False)
    assert found.commands[1].is_error
    assert found.files[0].commands_since == 2
    assert found.files[0].content == "x\n"


def test_a_write_after_a_read_is_written_not_created_and_files_are_newest_first() -> None:
    branch = Branch()
    branch.call("read", {"path": "old.txt"}, result="a\nb\n")
    branch.call("write", {"path": "new.txt", "content": "n\n"})
    branch.call("write", {"path": "./old.txt", "content": "a\nc\n"})
    found = branch.files()
    assert [f.path for f in found.files] == ["old.txt", "new.txt"]
    old = found.file("old.txt")
    assert old is not None and old.kinds == {"read", "written"}
    assert [(c.kind, c.added, c.removed) for c in old.changes] == [("written", 1, 1)]


def test_only_the_branch_counts_and_a_call_without_its_result_is_not_a_change() -> None:
    branch = Branch()
    branch.call("write", {"path": "kept.txt", "content": "k\n"})
    fork_point = list(branch.entries)
    branch.call("write", {"path": "left-behind.txt", "content": "l\n"})
    # The other branch from the fork point: only what is on it is passed.
    other = Branch()
    other.entries = fork_point
    other.calls = 10
    other.call("edit", {"path": "kept.txt", "edits": [{"oldText": "k", "newText": "K"}]})
    pending = {
        "type": "toolCall",
        "id": "late",
        "name": "write",
        "arguments": {"path": "p.txt", "content": "p"},
    }
    other.entries.append(
        {
            "type": "message",
            "id": "x",
            "parentId": None,
            "message": {"role": "assistant", "content": [pending]},
        }
    )
    found = other.files()
    assert [f.path for f in found.files] == ["kept.txt"]
    assert found.files[0].content == "K\n"


def test_line_diff_counts_like_git_and_paths_normalize_like_pi() -> None:
    assert line_diff("a\nb\n", "a\nb")[:2] == (1, 1)  # the final newline
    assert line_diff("", "one\ntwo\n")[:2] == (2, 0)
    assert normalize_path("@src/../x.py", CWD) == f"{CWD}/x.py"
    assert normalize_path("/etc/hosts", CWD) == "/etc/hosts"


def test_a_walk_kept_at_a_node_goes_on_to_a_node_below_as_one_walk_would() -> None:
    branch = Branch()
    branch.call("write", {"path": "a.txt", "content": "1\n2\n"})
    branch.call("bash", {"command": "ls"})
    # The edit's call is before the cut, its result after: the kept walk still waits for it.
    branch.call("edit", {"path": "a.txt", "edits": [{"oldText": "2", "newText": "3"}]})
    branch.call("read", {"path": "b.txt"}, result="b\n")
    whole = branch.files()
    for cut in range(len(branch.entries) + 1):
        walk = FilesWalk(CWD)
        walk.feed(branch.entries[:cut])
        kept = pickle.loads(pickle.dumps(walk))  # as a cache keeps it
        kept.feed(branch.entries[cut:])
        found = kept.result()
        assert [(f.path, f.kinds, f.content, f.commands_since, f.changes) for f in found.files] == [
            (f.path, f.kinds, f.content, f.commands_since, f.changes) for f in whole.files
        ], cut
        assert found.commands == whole.commands


def test_one_change_at_a_time_names_the_same_paths_as_the_walk() -> None:
    from pitree.files import changed_path, file_calls

    branch = Branch()
    branch.call("write", {"path": "a.py", "content": "x\n"})
    branch.call("edit", {"path": "@b.py", "edits": [{"oldText": "1", "newText": "2"}]})
    branch.call("edit", {"path": "c.py", "oldText": "1", "newText": "2"}, error=True)  # failed
    branch.call("edit", {"path": "d.py", "edits": []})  # nothing to change
    branch.call("read", {"path": "e.py"})
    branch.call("write", {"path": "/elsewhere/f.txt", "content": "f"})
    calls: dict[str, Any] = {}
    changed = []
    for entry in branch.entries:
        message = entry["message"]
        calls.update(file_calls(message))
        if message["role"] == "toolResult" and message["toolCallId"] in calls:
            name, arguments = calls[message["toolCallId"]]
            changed.append(changed_path(name, arguments, message, CWD))
    assert changed == [f"{CWD}/a.py", f"{CWD}/b.py", None, None, "/elsewhere/f.txt"]
    walked = {f.absolute for f in branch.files().files if f.changes}
    assert walked == {p for p in changed if p is not None}
