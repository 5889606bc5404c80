"""Two branches compared by their work (pitree.files_compare): each side's own changes, per file."""

from __future__ import annotations

import copy
from typing import Any

from pitree.files_compare import compare_files
from tests.domain.test_branch_files import CWD, Branch


def fork(prefix: Branch, tag: str) -> Branch:
    """A branch going on from ``prefix``'s last entry; its own entries have ids of their own."""
    branch = Branch()
    branch.entries = copy.deepcopy(prefix.entries)
    branch.calls = prefix.calls
    original = branch._add

    def add(message: dict[str, Any]) -> str:
        entry_id = original(message)
        branch.entries[-1]["id"] = f"{tag}{entry_id}"
        if "toolCallId" in message:
            message["toolCallId"] = f"{tag}{message['toolCallId']}"
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                block["id"] = f"{tag}{block['id']}"
        return f"{tag}{entry_id}"

    branch._add = add  # type: ignore[method-assign]
    return branch


def two_sides() -> tuple[Branch, Branch]:
    prefix = Branch()
    prefix.call("write", {"path": "shared.py", "content": "a = 1\nb = 2\n"})
    prefix.call("write", {"path": "before.txt", "content": "old\n"})  # changed before the fork only
    prefix.call("read", {"path": "notes.md"}, result="hello\n")
    return fork(prefix, "L"), fork(prefix, "R")


def test_files_changed_after_the_fork_are_classified_by_side() -> None:
    left, right = two_sides()
    left.call("edit", {"path": "shared.py", "edits": [{"oldText": "b = 2", "newText": "b = 3"}]})
    left.call("write", {"path": "left.py", "content": "x\ny\n"})
    left.call("read", {"path": "readonly.py"}, result="r\n")  # a read is not a change
    right.call("edit", {"path": f"{CWD}/shared.py", "oldText": "a = 1", "newText": "a = 10"})
    right.call("write", {"path": "right.py", "content": "z\n"})
    right.call("edit", {"path": "nowhere.py", "oldText": "q", "newText": "r"}, error=True)

    found = compare_files(left.files(), right.files())

    assert [f.path for f in found.only_left] == ["left.py"]
    assert [f.path for f in found.only_right] == ["right.py"]
    assert [f.path for f in found.both] == ["shared.py"]
    assert found.shared_changes == 2  # shared.py's and before.txt's writes, made before the branches parted
    [both] = found.both
    assert both.left is not None and both.right is not None
    assert [(c.kind, c.added, c.removed) for c in both.left.changes] == [("edited", 1, 1)]
    assert [(c.kind, c.added, c.removed) for c in both.right.changes] == [("edited", 1, 1)]
    assert both.left.changes[0].hunks[0].lines == [" a = 1", "-b = 2", "+b = 3"]
    assert both.right.changes[0].hunks[0].lines == ["-a = 1", "+a = 10", " b = 2"]
    # Both texts are known: how the right's version differs from the left's.
    assert both.same_content is False and both.content_diff is not None
    added, removed, hunks = both.content_diff
    assert (added, removed) == (2, 2)
    assert hunks[0].lines == ["-a = 1", "-b = 3", "+a = 10", "+b = 2"]
    [only] = found.only_left
    assert only.right is None and only.left is not None
    assert (only.left.added, only.left.removed) == (2, 0) and only.left.changes[0].kind == "created"


def test_the_same_change_on_both_sides_has_the_same_content_and_an_ancestor_has_no_own_work() -> None:
    left, right = two_sides()
    for side in (left, right):
        side.call("edit", {"path": "shared.py", "edits": [{"oldText": "b = 2", "newText": "b = 4"}]})
    found = compare_files(left.files(), right.files())
    [both] = found.both
    assert both.same_content is True and both.content_diff is None

    # Comparing a node with one below it: everything is the lower one's own.
    prefix = Branch()
    prefix.call("write", {"path": "a.txt", "content": "1\n"})
    above = copy.deepcopy(prefix.entries)
    prefix.call("edit", {"path": "a.txt", "oldText": "1", "newText": "2"})
    prefix.call("write", {"path": "b.txt", "content": "b\n"})
    from pitree.files import branch_files

    found = compare_files(branch_files(above, CWD), prefix.files())
    assert found.only_left == [] and found.both == []
    assert [f.path for f in found.only_right] == ["b.txt", "a.txt"]  # the most recently changed first
    assert [c.kind for c in found.only_right[1].right.changes] == ["edited"]  # type: ignore[union-attr]
    assert found.shared_changes == 1


def test_unknown_contents_give_no_content_diff() -> None:
    left, right = two_sides()
    left.call("edit", {"path": "never_read.py", "oldText": "a", "newText": "b"})
    right.call("edit", {"path": "never_read.py", "oldText": "a", "newText": "c"})
    [both] = compare_files(left.files(), right.files()).both
    assert both.same_content is None and both.content_diff is None
    assert both.left is not None and both.left.changes[0].numbered is False
