"""Tree operations: navigation, branch summaries, context edits, labels, names, fork and clone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compaction_app.sessiontool import branch_with_summary as branch_with_summary_command
from compaction_app.sessiontool import context_edit as context_edit_command
from compaction_app.sessiontool import fork as fork_command
from pitree.entries import entry_from_value
from pitree.operations import (
    BranchedSession,
    TreeOperationError,
    apply_navigation,
    branch_summary_entry,
    context_edit_entry,
    copy_for_fork,
    create_branched_session,
    fork_plan,
    label_entry,
    plan_navigation,
    session_info_entry,
)
from pitree.session import load_session
from pitree.tree import SessionTree
from tests.conformance.compare import ConformanceRun, assert_conforms, conformance_dir, run_params


def tree_of(*entries: dict[str, Any]) -> SessionTree:
    return SessionTree([entry_from_value(i, e) for i, e in enumerate(entries)])


def msg(entry_id: str, parent: str | None, role: str, content: Any = "text", **extra: Any) -> dict[str, Any]:
    message = {"role": role, "content": content, **extra}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": message,
    }


def label(entry_id: str, parent: str | None, target: str, text: str | None, second: int) -> dict[str, Any]:
    entry = {
        "type": "label",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-03-01T10:00:{second:02d}.000Z",
        "targetId": target,
    }
    if text is not None:
        entry["label"] = text
    return entry


def case_tree(name: str) -> SessionTree:
    cases = conformance_dir()
    if cases is None:
        pytest.skip("shared conformance cases not found")
    return load_session((cases / "sessions" / f"{name}.jsonl").read_text(encoding="utf-8")).tree


LINEAR = tree_of(
    msg("u1", None, "user", [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]),
    msg("a1", "u1", "assistant", [{"type": "text", "text": "Hello"}]),
    msg("t1", "a1", "toolResult", [{"type": "text", "text": "ok"}]),
    {
        "type": "custom_message",
        "customType": "note",
        "content": "remember",
        "display": True,
        "id": "cm1",
        "parentId": "t1",
        "timestamp": "2026-03-01T10:00:03.000Z",
    },
    msg("s1", "cm1", "system", "rules"),
    msg("u2", "s1", "user", "Next"),
    msg("x1", "u1", "user", "Side branch"),
)


# -- Pi's recorded outputs ------------------------------------------------------------------------


@pytest.mark.parametrize("run", run_params("fork"))
def test_fork_matches_pi_recorded_output(run: ConformanceRun) -> None:
    assert_conforms(run, fork_command.run)


@pytest.mark.parametrize("run", run_params("branch-with-summary"))
def test_branch_with_summary_matches_pi_recorded_output(run: ConformanceRun) -> None:
    assert_conforms(run, branch_with_summary_command.run)


# -- navigation -----------------------------------------------------------------------------------


class TestNavigation:
    def test_user_target_moves_leaf_to_its_parent_and_returns_its_text(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "u1")
        assert plan.new_leaf_id is None
        assert plan.editor_text == "Hi there"
        plan = plan_navigation(LINEAR, "u2", "x1")
        assert (plan.new_leaf_id, plan.editor_text) == ("u1", "Side branch")

    def test_custom_message_target_behaves_like_a_user_message(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "cm1")
        assert (plan.new_leaf_id, plan.editor_text) == ("t1", "remember")

    @pytest.mark.parametrize("target", ["a1", "t1", "s1"])
    def test_other_targets_become_the_leaf_without_editor_text(self, target: str) -> None:
        plan = plan_navigation(LINEAR, "u2", target)
        assert (plan.new_leaf_id, plan.editor_text, plan.changed) == (target, None, True)

    def test_navigating_to_the_current_leaf_changes_nothing(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "u2")
        assert not plan.changed
        result = apply_navigation(LINEAR, plan, summary="ignored", label="ignored")
        assert result.entries == [] and result.leaf_id == "u2"

    def test_unknown_target_is_refused(self) -> None:
        with pytest.raises(TreeOperationError, match=r"^Entry ghost not found$"):
            plan_navigation(LINEAR, "u2", "ghost")

    def test_summary_hangs_under_the_new_leaf_and_records_the_leaf_left(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "x1")
        result = apply_navigation(
            LINEAR, plan, summary="Explored", details={"readFiles": [], "modifiedFiles": []}
        )
        (entry,) = result.entries
        assert list(entry)[:4] == ["type", "id", "parentId", "timestamp"]
        assert (entry["type"], entry["parentId"], entry["fromId"], entry["summary"]) == (
            "branch_summary",
            "u1",
            "u2",
            "Explored",
        )
        assert entry["fromHook"] is False
        assert result.leaf_id == entry["id"] == result.summary_entry["id"]  # type: ignore[index]

    def test_label_targets_the_summary_when_there_is_one_else_the_target(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "a1")
        with_summary = apply_navigation(LINEAR, plan, summary="S", label="here")
        summary, made = with_summary.entries
        assert (made["targetId"], made["parentId"], made["label"]) == (summary["id"], summary["id"], "here")
        assert with_summary.leaf_id == made["id"]
        without = apply_navigation(LINEAR, plan, label="here")
        (made,) = without.entries
        assert (made["targetId"], made["parentId"]) == ("a1", "a1")

    def test_label_after_a_reset_leaf_becomes_a_new_root(self) -> None:
        plan = plan_navigation(LINEAR, "u2", "u1")
        (made,) = apply_navigation(LINEAR, plan, label="start").entries
        assert (made["parentId"], made["targetId"]) == (None, "u1")

    def test_branch_summary_from_a_null_leaf_says_root(self) -> None:
        entry = branch_summary_entry("u1", None, "x", taken_ids=LINEAR.by_id)
        assert entry["fromId"] == "root"
        assert "details" not in entry and "fromHook" not in entry and "usage" not in entry

    def test_seed_worked_example_return_from_jwt_branch(self) -> None:
        tree = case_tree("s01_seed_worked_example")
        plan = plan_navigation(tree, "A3", "U2B")
        assert (plan.new_leaf_id, plan.editor_text) == ("BS1", "改成 session cookie")
        plan = plan_navigation(tree, "A3", "A4")
        result = apply_navigation(tree, plan, summary="JWT abandoned")
        (entry,) = result.entries
        assert (entry["parentId"], entry["fromId"]) == ("A4", "A3")
        assert entry["id"] not in tree.by_id


# -- appenders ------------------------------------------------------------------------------------


class TestContextEdit:
    def test_replacement_shape_is_checked_before_the_target(self) -> None:
        for bad in ("text", ["a"], {"content": 3}, {}):
            with pytest.raises(
                TreeOperationError, match=r"^Context edit replacement must be null or contain"
            ):
                context_edit_entry(LINEAR, "u2", "ghost", bad)

    def test_target_must_exist_then_be_on_the_branch_then_be_editable(self) -> None:
        with pytest.raises(TreeOperationError, match=r"^Entry ghost not found$"):
            context_edit_entry(LINEAR, "u2", "ghost", None)
        with pytest.raises(TreeOperationError, match=r"^Entry x1 is not on the active branch$"):
            context_edit_entry(LINEAR, "u2", "x1", None)
        with pytest.raises(
            TreeOperationError, match=r"^Entry s1 does not contribute editable model content$"
        ):
            context_edit_entry(LINEAR, "u2", "s1", None)

    def test_string_replacement_becomes_a_text_block_for_assistant_and_tool_result(self) -> None:
        for target in ("a1", "t1"):
            entry = context_edit_entry(LINEAR, "u2", target, {"content": "short"})
            assert entry["replacement"] == {"content": [{"type": "text", "text": "short"}]}
        for target in ("u1", "cm1"):
            assert context_edit_entry(LINEAR, "u2", target, {"content": "short"})["replacement"] == {
                "content": "short"
            }

    def test_null_replacement_is_written_under_the_leaf(self) -> None:
        entry = context_edit_entry(LINEAR, "u2", "a1", None)
        assert list(entry) == ["type", "id", "parentId", "timestamp", "targetId", "replacement"]
        assert (entry["parentId"], entry["targetId"], entry["replacement"]) == ("u2", "a1", None)

    def test_command_reprojects_with_the_edit(self) -> None:
        cases = conformance_dir()
        if cases is None:
            pytest.skip("shared conformance cases not found")
        file = str(cases / "sessions" / "b01_two_branches.jsonl")
        out = context_edit_command.run([file, "a2b", '{"content":"rewritten"}'])
        assert isinstance(out, dict)
        edited = [m for m in out["messages"] if m["source"] == "a2b"]
        assert edited[0]["content"] == [{"type": "text", "text": "rewritten"}]
        assert out["contextEntries"][-1] == out["entry"]["id"]
        assert "timestamp" not in out["entry"]
        omitted = context_edit_command.run([file, "a2", "null", "--leaf=a3"])
        assert isinstance(omitted, dict)
        assert "a2" not in [m["source"] for m in omitted["messages"]]
        assert context_edit_command.run([file, "a2", "null"]) == {
            "error": "Entry a2 is not on the active branch"
        }


class TestLabelsAndNames:
    def test_label_needs_an_existing_target_on_any_branch(self) -> None:
        with pytest.raises(TreeOperationError, match=r"^Entry ghost not found$"):
            label_entry(LINEAR, "u2", "ghost", "x")
        entry = label_entry(LINEAR, "u2", "x1", "side")
        assert (entry["parentId"], entry["targetId"], entry["label"]) == ("u2", "x1", "side")

    def test_empty_label_clears_and_writes_no_label(self) -> None:
        assert "label" not in label_entry(LINEAR, "u2", "u1", "")

    def test_session_name_is_cleaned(self) -> None:
        assert session_info_entry(LINEAR, "u2", "  My\r\n\nsession \n")["name"] == "My session"
        with pytest.raises(TreeOperationError, match=r"^Session name cannot be empty$"):
            session_info_entry(LINEAR, "u2", " \r\n ")


# -- fork and clone -------------------------------------------------------------------------------


class TestCreateBranchedSession:
    def test_labels_are_dropped_rechained_and_recreated_with_original_times(self) -> None:
        tree = case_tree("b04_labels")
        branched = create_branched_session(tree, "l3", cwd="/w", parent_session="/src.jsonl")
        assert [e["id"] for e in branched.entries[:4]] == ["u1", "a1", "u2", "a2"]
        assert [e["parentId"] for e in branched.entries[:4]] == [None, "u1", "a1", "u2"]
        labels = branched.entries[4:]
        assert [(e["targetId"], e["label"], e["timestamp"]) for e in labels] == [
            ("u1", "begin", "2026-03-01T10:00:07.000Z"),
            ("a1", "tokenizer-done", "2026-03-01T10:00:13.000Z"),
        ]
        assert labels[0]["parentId"] == "a2" and labels[1]["parentId"] == labels[0]["id"]
        assert branched.leaf_id == labels[1]["id"]
        assert {e["id"] for e in labels}.isdisjoint(tree.by_id.keys() - {"l1", "l2", "l3"})
        header = branched.header
        assert (header["type"], header["version"], header["cwd"], header["parentSession"]) == (
            "session",
            3,
            "/w",
            "/src.jsonl",
        )

    def test_first_kept_label_maps_to_the_next_kept_entry(self) -> None:
        def compaction(entry_id: str, parent: str, first_kept: str) -> dict[str, Any]:
            return {
                "type": "compaction",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "t",
                "summary": "s",
                "firstKeptEntryId": first_kept,
                "tokensBefore": 1,
            }

        tree = tree_of(
            msg("u1", None, "user"),
            label("L1", "u1", "u1", "x", 1),
            msg("a1", "L1", "assistant", []),
            label("L2", "a1", "a1", "y", 2),
            compaction("k1", "L2", "L1"),
            compaction("k2", "k1", "L2"),
            compaction("k3", "k2", "k3"),
            compaction("k4", "k3", "elsewhere"),
        )
        branched = create_branched_session(tree, "k4", cwd="/", parent_session=None)
        kept = {e["id"]: e for e in branched.entries if e["type"] == "compaction"}
        assert kept["k1"]["firstKeptEntryId"] == "a1"
        assert kept["k2"]["firstKeptEntryId"] == "k1"  # the label sat right before the compaction
        assert kept["k3"]["firstKeptEntryId"] == "k3"
        assert kept["k4"]["firstKeptEntryId"] == "elsewhere"
        assert kept["k1"]["parentId"] == "a1"
        assert "parentSession" not in branched.header

    def test_unknown_leaf_is_refused(self) -> None:
        with pytest.raises(TreeOperationError, match=r"^Entry ghost not found$"):
            create_branched_session(LINEAR, "ghost", cwd="/", parent_session=None)

    def test_orphan_root_loses_its_dangling_parent(self) -> None:
        tree = tree_of(msg("u1", "gone", "user"), msg("a1", "u1", "assistant", []))
        assert (
            create_branched_session(tree, "a1", cwd="/", parent_session=None).entries[0]["parentId"] is None
        )


class TestFork:
    def test_before_a_user_message_copies_up_to_its_parent_with_its_text(self) -> None:
        plan = fork_plan(LINEAR, "u1")
        assert (plan.target_leaf_id, plan.selected_text) == (None, "Hi there")
        assert copy_for_fork(LINEAR, plan.target_leaf_id, cwd="/", parent_session="p").entries == []
        plan = fork_plan(LINEAR, "u2")
        assert (plan.target_leaf_id, plan.selected_text) == ("s1", "Next")

    def test_before_needs_a_user_message_and_at_takes_any_entry(self) -> None:
        with pytest.raises(TreeOperationError, match=r"^Invalid entry ID for forking$"):
            fork_plan(LINEAR, "a1")
        with pytest.raises(TreeOperationError, match=r"^Invalid entry ID for forking$"):
            fork_plan(LINEAR, "ghost", "at")
        at = fork_plan(LINEAR, "a1", "at")
        assert (at.target_leaf_id, at.selected_text) == ("a1", None)

    def test_copy_modes(self) -> None:
        tree = case_tree("b01_two_branches")

        def ids(branched: BranchedSession) -> list[str]:
            return [e["id"] for e in branched.entries]

        path = copy_for_fork(tree, "a2", mode="path", cwd="/", parent_session=None)
        assert ids(path) == ["u1", "a1", "u2", "a2"]
        siblings = copy_for_fork(tree, "a2", mode="path+siblings", cwd="/", parent_session=None)
        assert ids(siblings) == ["u1", "a1", "u2", "a2", "u2b", "a2b", "t2b", "a3b"]
        assert siblings.leaf_id == "a2"
        subtree = copy_for_fork(tree, "u2", mode="subtree", cwd="/", parent_session=None)
        assert ids(subtree) == ["u1", "a1", "u2", "a2", "t1", "a3"]
        everything = copy_for_fork(tree, "a1", mode="subtree", cwd="/", parent_session=None)
        assert len(everything.entries) == len(tree.entries)
        assert [e["parentId"] for e in everything.entries] == [e.parent_id for e in tree.entries]

    def test_fork_command_describes_the_new_file_without_writing(self, tmp_path: Path) -> None:
        source = tmp_path / "s.jsonl"
        source.write_text(
            '{"type":"session","version":3,"id":"s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/w"}\n'
            '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-03-01T10:00:01.000Z",'
            '"message":{"role":"user","content":"hi","timestamp":1}}\n'
            '{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-03-01T10:00:02.000Z",'
            '"provider":"p","modelId":"m"}\n',
            encoding="utf-8",
        )
        before = sorted(tmp_path.iterdir())
        out = fork_command.run([str(source), "u1"])
        assert isinstance(out, dict) and out["fileWrittenLines"] == 2 and out["leafId"] == "u1"
        lazy = fork_command.run([str(source), "m1"])
        assert isinstance(lazy, dict) and lazy["fileWrittenLines"] == 0  # no conversation yet: written later
        assert fork_command.run([str(source), "ghost"]) == {"error": "Entry ghost not found"}
        assert sorted(tmp_path.iterdir()) == before
