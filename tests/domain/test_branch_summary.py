"""Branch summaries: which entries are collected and how they fit the token budget."""

from __future__ import annotations

from typing import Any

import pytest

from compaction_app.domain.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    branch_file_lists,
    branch_summary_budget,
    branch_summary_text,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from compaction_app.sessiontool import branch_summary as branch_summary_command
from pitree.entries import entry_from_value
from pitree.session import load_session
from pitree.tree import SessionTree
from tests.conformance.compare import ConformanceRun, assert_conforms, conformance_dir, run_params


def tree_of(*entries: dict[str, Any]) -> SessionTree:
    return SessionTree([entry_from_value(i, e) for i, e in enumerate(entries)])


def msg(entry_id: str, parent: str | None, role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": role, "content": content, **extra},
    }


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


def call(name: str, path: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": f"c-{path}", "name": name, "arguments": {"path": path}}


def summary(entry_id: str, parent: str, body: str, details: Any = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "branch_summary",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "fromId": "x",
        "summary": body,
        **extra,
    }
    if details is not None:
        entry["details"] = details
    return entry


def case_tree(name: str) -> SessionTree:
    cases = conformance_dir()
    if cases is None:
        pytest.skip("shared conformance cases not found")
    return load_session((cases / "sessions" / f"{name}.jsonl").read_text(encoding="utf-8")).tree


@pytest.mark.parametrize("run", run_params("branch-summary"))
def test_matches_pi_recorded_output(run: ConformanceRun) -> None:
    assert_conforms(run, branch_summary_command.run)


class TestCollect:
    def test_worked_example_collects_the_abandoned_jwt_branch(self) -> None:
        tree = case_tree("s01_seed_worked_example")
        entries, ancestor = collect_entries_for_branch_summary(tree, "A3", "A4")
        assert ([e.id for e in entries], ancestor) == (["U2", "A3"], "A2")

    def test_target_above_the_old_leaf_collects_what_lies_below_it(self) -> None:
        tree = case_tree("b01_two_branches")
        entries, ancestor = collect_entries_for_branch_summary(tree, "a3", "u2")
        assert ([e.id for e in entries], ancestor) == (["a2", "t1", "a3"], "u2")

    def test_target_below_or_at_the_old_leaf_collects_nothing(self) -> None:
        tree = case_tree("b01_two_branches")
        assert collect_entries_for_branch_summary(tree, "a2", "a3") == ([], "a2")
        assert collect_entries_for_branch_summary(tree, None, "a3") == ([], None)
        assert collect_entries_for_branch_summary(tree, "ghost", "a3") == ([], None)

    def test_no_common_ancestor_collects_the_whole_old_path(self) -> None:
        tree = case_tree("b01_two_branches")
        entries, ancestor = collect_entries_for_branch_summary(tree, "a3", "ghost")
        assert ([e.id for e in entries], ancestor) == (["u1", "a1", "u2", "a2", "t1", "a3"], None)


class TestPrepare:
    def test_tool_results_are_skipped_and_tool_calls_give_file_ops(self) -> None:
        tree = tree_of(
            msg("u1", None, "user", "go"),
            msg("a1", "u1", "assistant", [call("read", "a.py")]),
            msg("t1", "a1", "toolResult", text("long output " * 50)),
            msg("a2", "t1", "assistant", [call("write", "b.py"), call("edit", "a.py")]),
        )
        prepared = prepare_branch_entries(tree.path("a2"))
        assert prepared.sources == ["u1", "a1", "a2"]
        assert prepared.file_ops.as_dict() == {"read": ["a.py"], "written": ["b.py"], "edited": ["a.py"]}
        assert branch_file_lists(prepared) == ([], ["a.py", "b.py"])

    def test_budget_is_filled_newest_first_and_stops_at_the_first_overflow(self) -> None:
        entries, _ = collect_entries_for_branch_summary(case_tree("b06_branch_summary_budget"), "a9", "other")
        assert prepare_branch_entries(entries, 7).total_tokens == 7
        assert prepare_branch_entries(entries, 150).sources == ["u7", "a7", "bs1", "u9", "a9"]
        assert (
            prepare_branch_entries(entries, 0).total_tokens
            == prepare_branch_entries(entries, -5).total_tokens
        )

    def test_summaries_overflow_the_budget_only_while_it_is_under_ninety_percent(self) -> None:
        entries, _ = collect_entries_for_branch_summary(case_tree("b06_branch_summary_budget"), "a9", "other")
        squeezed = prepare_branch_entries(entries, 8)  # 7 of 8 used: the 50-token summary still goes in
        assert (squeezed.sources, squeezed.total_tokens) == (["bs1", "u9", "a9"], 57)
        full = prepare_branch_entries(entries, 7)  # 7 of 7 used: it does not
        assert full.sources == ["u9", "a9"]

    def test_earlier_summary_file_lists_carry_forward_even_when_cut_off(self) -> None:
        tree = tree_of(
            msg("u1", None, "user", "start"),
            summary("bs1", "u1", "old work", {"readFiles": ["r.py"], "modifiedFiles": ["m.py"]}),
            summary(
                "bs2", "bs1", "hook work", {"readFiles": ["hook.py"], "modifiedFiles": []}, fromHook=True
            ),
            msg("u2", "bs2", "user", "x" * 400),
        )
        prepared = prepare_branch_entries(tree.path("u2"), 50)
        assert prepared.sources == []  # the newest message alone breaks the budget
        assert prepared.file_ops.as_dict() == {"read": ["r.py"], "written": [], "edited": ["m.py"]}

    def test_context_edits_among_the_entries_apply_without_a_compaction_range(self) -> None:
        tree = tree_of(
            msg("u1", None, "user", "question"),
            msg("a1", "u1", "assistant", [call("edit", "gone.py")]),
            {
                "type": "context_edit",
                "id": "e1",
                "parentId": "a1",
                "timestamp": "t",
                "targetId": "a1",
                "replacement": None,
            },
            msg("a2", "e1", "assistant", text("draft")),
            {
                "type": "context_edit",
                "id": "e2",
                "parentId": "a2",
                "timestamp": "t",
                "targetId": "a2",
                "replacement": {"content": "final"},
            },
        )
        prepared = prepare_branch_entries(tree.path("e2"))
        assert prepared.sources == ["u1", "a2"]
        assert prepared.messages[1]["content"] == text("final")
        assert prepared.file_ops.as_dict()["edited"] == []

    def test_empty_summaries_and_every_compaction_count(self) -> None:
        tree = tree_of(
            msg("u1", None, "user", "q"),
            {
                "type": "compaction",
                "id": "k1",
                "parentId": "u1",
                "timestamp": "t",
                "summary": "first",
                "firstKeptEntryId": "u1",
                "tokensBefore": 10,
            },
            {
                "type": "compaction",
                "id": "k2",
                "parentId": "k1",
                "timestamp": "t",
                "summary": "second",
                "firstKeptEntryId": "k1",
                "tokensBefore": 10,
                "systemMessage": {"role": "system", "content": "s"},
            },
            summary("bs1", "k2", ""),
            {
                "type": "label",
                "id": "l1",
                "parentId": "bs1",
                "timestamp": "t",
                "targetId": "u1",
                "label": "x",
            },
        )
        prepared = prepare_branch_entries(tree.path("l1"))
        roles = [m["role"] for m in prepared.messages]
        assert roles == ["user", "compactionSummary", "compactionSummary", "branchSummary"]


class TestSummaryText:
    def test_budget_is_window_minus_reserve_with_pi_defaults(self) -> None:
        assert branch_summary_budget(200_000, 20_000) == 180_000
        assert branch_summary_budget(None) == 128_000 - 16_384
        assert branch_summary_budget(0, None) == 128_000 - 16_384

    def test_text_has_the_preamble_then_the_model_text_then_file_lists(self) -> None:
        assert branch_summary_text("Did X.", [], []) == BRANCH_SUMMARY_PREAMBLE + "Did X."
        out = branch_summary_text("Did X.", ["a.py"], ["b.py"])
        assert out.startswith(BRANCH_SUMMARY_PREAMBLE + "Did X.\n\n<read-files>\na.py\n</read-files>")
        assert out.endswith("<modified-files>\nb.py\n</modified-files>")
