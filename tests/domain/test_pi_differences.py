"""Each difference from Pi 1.6.0 that the differential campaign found, pinned by a small example."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from compaction_app.sessiontool import context_edit as context_edit_command
from compaction_app.sessiontool import cut as cut_command
from compaction_app.sessiontool import dump
from compaction_app.sessiontool import fork as fork_command
from compaction_app.sessiontool import project as project_command
from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from pitree.operations import copy_for_fork
from pitree.session import load_session
from pitree.timestamps import js_date_ms
from pitree.tokens import current_system_message
from pitree.tree import SessionTree
from pitree.tree_listing import tree_listing

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}


def stamp(second: int) -> str:
    return f"2026-03-01T10:00:{second:02d}.000Z"


def entry(entry_id: str, parent: str | None, second: int, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content": entry_id, "timestamp": 1772359200000 + second * 1000}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": stamp(second),
        "message": message,
        **extra,
    }


def write(tmp_path: Path, *lines: Any) -> str:
    path = tmp_path / "session.jsonl"
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in [HEADER, *lines]) + "\n"
    path.write_text(text, encoding="utf-8")
    return str(path)


def answer(run: Any, args: list[str]) -> Any:
    """The answer as the command prints it, parsed back."""
    return json.loads(dump(run(args)))


def test_children_are_listed_depth_first_oldest_child_first(tmp_path: Path) -> None:
    # a branches into b (older) and c; c's subtree holds a second branch point, listed after b's.
    file = write(
        tmp_path,
        entry("a", None, 1),
        entry("c", "a", 5),
        entry("b", "a", 2),
        entry("c1", "c", 6),
        entry("c2", "c", 7),
        entry("b1", "b", 3),
    )
    children = answer(project_command.run, [file])["load"]["tree"]["children"]
    assert children == [["a", ["b", "c"]], ["b", ["b1"]], ["c", ["c1", "c2"]]]


def test_lines_without_ids_list_as_roots_and_count_once_together(tmp_path: Path) -> None:
    file = write(tmp_path, entry("a", None, 1), "42", '"text"', "[1,2]", "true", "null", entry("b", "a", 2))
    load = answer(project_command.run, [file])["load"]
    # Pi counts its id index: a, b, and one key for every line without an id (null is skipped).
    assert load["entryCount"] == 3
    assert load["tree"]["roots"] == ["a", None, None, None, None]


def test_a_duplicated_id_counts_once_and_other_id_kinds_count_apart(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        entry("a", None, 1),
        entry("b", "a", 2),
        entry("b", "a", 3),
        {"type": "custom", "parentId": "a", "timestamp": stamp(4)},
        {"type": "custom", "id": None, "parentId": "a", "timestamp": stamp(5)},
        {"type": "custom", "id": 1, "parentId": "a", "timestamp": stamp(6)},
        {"type": "custom", "id": "1", "parentId": "a", "timestamp": stamp(7)},
        {"type": "custom", "id": 1.0, "parentId": "a", "timestamp": stamp(8)},
    )
    load = answer(project_command.run, [file])["load"]
    # a, b (twice), no id, null, the number 1 (written twice), the string "1".
    assert load["entryCount"] == 6


def test_a_cut_with_nothing_to_compact_does_not_say_whether_to_compact(tmp_path: Path) -> None:
    small = write(tmp_path, entry("a", None, 1))
    out = answer(cut_command.run, [small, "20000", "--window=1000"])
    assert out["result"] is None
    assert out["manualCompactError"] == "Nothing to compact (session too small)"
    assert "shouldCompact" not in out


def test_a_cut_with_a_plan_says_whether_to_compact(tmp_path: Path) -> None:
    long_text = "word " * 4000
    lines = [
        entry(
            f"u{i}",
            f"u{i - 1}" if i else None,
            i,
            message={"role": "user", "content": long_text, "timestamp": 1},
        )
        for i in range(6)
    ]
    out = answer(cut_command.run, [write(tmp_path, *lines), "100", "--window=1000"])
    assert out["result"] is not None
    assert out["shouldCompact"]["contextWindow"] == 1000
    assert out["shouldCompact"]["result"] is True


def test_a_second_header_is_not_an_entry(tmp_path: Path) -> None:
    file = write(tmp_path, entry("a", None, 1), {**HEADER, "id": "other"}, entry("b", "a", 2))
    load = answer(project_command.run, [file])["load"]
    assert load["entryCount"] == 2
    assert load["header"]["id"] == "s1"


def test_a_duplicated_id_lists_its_last_entry_at_each_place() -> None:
    values = [entry("a", None, 1), entry("x", "a", 2), entry("y", "a", 3), entry("x", "y", 4)]
    entries = [entry_from_value(i, v) for i, v in enumerate(values)]
    listing = tree_listing(entries)
    assert not listing.cycle
    # Both x lines name the later x (under y), so it is listed under a and again under y.
    assert listing.children == [(0, [2, 3]), (2, [3])]


def test_a_parent_cycle_is_reported_not_walked() -> None:
    values = [entry("a", None, 1), entry("b", "a", 2), entry("a", "b", 3)]
    assert tree_listing([entry_from_value(i, v) for i, v in enumerate(values)]).cycle


def test_big_integers_are_written_as_javascript_writes_them(tmp_path: Path) -> None:
    usage = {"input": 12345678901234567890, "output": 2**53 + 1, "cacheRead": 1e21, "cacheWrite": 1.5e-7}
    assistant = {
        "role": "assistant",
        "content": [],
        "usage": {**usage, "totalTokens": -0.0},
        "timestamp": 5e-324,
    }
    raw = json.dumps(
        {"type": "message", "id": "a", "parentId": None, "timestamp": stamp(1), "message": assistant}
    )
    file = write(tmp_path, raw)
    text = dump(project_command.run([file]))
    assert '"input":12345678901234567000' in text
    assert '"output":9007199254740992' in text
    assert '"cacheRead":1e+21' in text
    assert '"cacheWrite":1.5e-7' in text
    assert '"totalTokens":0' in text
    assert '"timestamp":5e-324' in text
    assert parse_json(text) is not None


def test_custom_messages_keep_their_details(tmp_path: Path) -> None:
    custom = {"type": "custom_message", "id": "c", "parentId": None, "timestamp": stamp(1)}
    file = write(
        tmp_path, {**custom, "customType": "x", "content": "hi", "display": True, "details": {"k": [1]}}
    )
    assert answer(project_command.run, [file])["messages"][0]["details"] == {"k": [1]}


def test_blocks_are_shown_without_signatures(tmp_path: Path) -> None:
    content = [
        {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
        {"type": "text", "text": "ok", "textSignature": "t"},
    ]
    assistant = {"role": "assistant", "content": content, "timestamp": 1}
    file = write(
        tmp_path,
        {"type": "message", "id": "a", "parentId": None, "timestamp": stamp(1), "message": assistant},
    )
    shown = answer(project_command.run, [file])["messages"][0]["content"]
    assert shown == [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"}]


def test_context_edit_answers_with_entry_context_and_messages(tmp_path: Path) -> None:
    file = write(tmp_path, entry("a", None, 1), entry("b", "a", 2))
    out = answer(context_edit_command.run, [file, "a", '{"content":"short"}'])
    assert set(out) == {"entry", "contextEntries", "messages"}
    assert "timestamp" not in out["entry"]
    assert out["messages"][0]["content"] == "short"


def test_dates_read_as_new_date_reads_them() -> None:
    assert js_date_ms(None) == 0
    assert js_date_ms(1772359200000.7) == 1772359200000
    assert js_date_ms(-1.5) == -1
    assert js_date_ms(9e15) != js_date_ms(9e15)  # beyond the time range: NaN
    assert js_date_ms({"a": 1}) != js_date_ms({"a": 1})


def test_children_with_null_and_absent_times_sort_as_pi_sorts_them() -> None:
    values = [
        entry("a", None, 1),
        {**entry("late", "a", 9)},
        {**entry("null", "a", 5), "timestamp": None},  # new Date(null) is the epoch: first
    ]
    tree = SessionTree([entry_from_value(i, v) for i, v in enumerate(values)])
    assert [tree.entries[c].id for c in tree.children_in_tree_order()[0][1]] == ["null", "late"]


def test_system_prompt_replay_follows_pi() -> None:
    untimed = {"role": "system", "content": "", "sections": {"p": "x"}}
    assert current_system_message([untimed]) is None  # no time and no tools: no prompt at all
    blocks = {
        "role": "system",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "timestamp": 1,
    }
    assert current_system_message([blocks])["content"] == "a\nb"  # type: ignore[index]
    both = {
        "role": "system",
        "content": "",
        "timestamp": 1,
        "toolsAdded": [{"name": "t", "v": 2}],
        "toolsRemoved": ["t"],
    }
    assert current_system_message([both])["toolsAdded"] == [{"name": "t", "v": 2}]  # type: ignore[index]


def test_fork_keeps_a_null_label_time() -> None:
    values = [
        entry("a", None, 1),
        {"type": "label", "id": "l", "parentId": "a", "timestamp": None, "targetId": "a", "label": "x"},
    ]
    branched = copy_for_fork(
        SessionTree([entry_from_value(i, v) for i, v in enumerate(values)]),
        "a",
        cwd="/w",
        parent_session=None,
    )
    label = branched.entries[-1]
    assert label["type"] == "label" and "timestamp" in label and label["timestamp"] is None


def test_sessiontool_prints_real_values(tmp_path: Path) -> None:
    file = write(tmp_path, entry("a", None, 1))
    forked = fork_command.run([file, "a"])
    assert isinstance(forked, dict)
    uuid.UUID(forked["header"]["id"])
    assert forked["returnedFile"].endswith(f"_{forked['header']['id']}.jsonl")
    assert forked["header"]["parentSession"] == str(Path(file).resolve())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"message"}\n', encoding="utf-8")
    assert project_command.run([str(bad)]) == {
        "error": f"Session file is not a valid pi session: {bad}",
        "fileEffect": "none",
    }
    v1 = tmp_path / "v1.jsonl"
    v1.write_text(
        json.dumps({"type": "session", "id": "old", "timestamp": stamp(0), "cwd": "/w"})
        + "\n"
        + json.dumps({"type": "message", "timestamp": stamp(1), "message": {"role": "user", "content": "hi"}})
        + "\n",
        encoding="utf-8",
    )
    load = answer(project_command.run, [str(v1)])["load"]
    made = load["tree"]["roots"][0]
    assert re.fullmatch(r"[0-9a-f]{8}", made)
    assert f'"id":"{made}"' in load["rewrittenFile"][1]
    assert load_session(v1.read_text()).file.migrated


# -- deliberate differences (README: "Deliberate differences from Pi") ------------------------------


def test_a_last_line_without_an_id_does_not_take_the_leaf(tmp_path: Path) -> None:
    # Pi's leaf becomes undefined here: an empty path, yet the stray line as its only context entry.
    file = write(tmp_path, entry("a", None, 1), "42")
    out = answer(project_command.run, [file])
    assert out["load"]["fileLeafId"] == "a"
    assert out["path"] == out["contextEntries"] == ["a"]


def test_a_v1_file_leaves_lines_that_are_not_objects_outside_the_chain(tmp_path: Path) -> None:
    # Pi's v1 migration gives an array line an id and chains it; a number line makes it throw.
    v1 = tmp_path / "v1.jsonl"
    user = {"type": "message", "timestamp": stamp(1), "message": {"role": "user", "content": "hi"}}
    v1.write_text(
        "\n".join(
            [
                json.dumps({"type": "session", "id": "old", "timestamp": stamp(0), "cwd": "/w"}),
                json.dumps(user),
                "[1,2]",
                json.dumps(user),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    out = answer(project_command.run, [str(v1)])
    assert len(out["path"]) == 2
    assert out["load"]["tree"]["roots"][1] is None


def test_a_parent_cycle_is_cut_at_its_earliest_entry_and_listed(tmp_path: Path) -> None:
    # Pi never returns from walking this path; piweb walks the tree cut at the cycle's earliest entry.
    # The listing is still Pi's: no entry of a rootless cycle is a root.
    file = write(tmp_path, entry("a", "b", 1), entry("b", "a", 2))
    out = answer(project_command.run, [file])
    assert out["path"] == out["contextEntries"] == ["a", "b"]
    assert out["load"]["tree"] == {"roots": [], "children": []}
