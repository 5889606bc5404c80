"""Compaction planning reproduces every ``cut`` run Pi recorded, and the worked example of the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction_app.domain.preparation import (
    ALREADY_COMPACTED,
    NOTHING_TO_COMPACT,
    manual_compaction_error,
    prepare_compaction,
)
from compaction_app.domain.settings import CompactionSettings
from compaction_app.sessiontool import cut
from pitree.entries import Entry
from pitree.session import load_session
from tests.conformance.compare import ConformanceRun, assert_conforms, conformance_dir, run_params


@pytest.mark.parametrize("run", run_params("cut"))
def test_cut_matches_pi(run: ConformanceRun) -> None:
    assert_conforms(run, cut.run)


def _worked_example() -> list[Entry]:
    cases = conformance_dir()
    if cases is None:
        pytest.skip("shared conformance cases not found")
    text = Path(cases / "sessions" / "s01_seed_worked_example.jsonl").read_text(encoding="utf-8")
    return load_session(text).tree.path("C1")


def _ids(messages: object) -> list[str | None]:
    return [m.source for m in messages]  # type: ignore[attr-defined]


def test_first_compaction_keeps_the_last_exchange() -> None:
    path = _worked_example()
    before = path[: [e.id for e in path].index("A6") + 1]
    # U4 and A6 are 2 tokens each, so a budget of 4 is reached exactly at U4.
    prep = prepare_compaction(before, CompactionSettings(keep_recent_tokens=4))
    assert prep is not None
    assert prep.first_kept_entry_id == "U4"
    assert not prep.is_split_turn
    assert _ids(prep.history) == ["U1", "A1", "T1", "A2", "BS1", "U2B", "A4", "U3", "A5"]
    assert prep.previous_summary is None
    assert [sorted(prep.file_ops.read)] == [["auth.ts"]]


def test_compaction_as_last_entry_is_already_compacted() -> None:
    path = _worked_example()
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=5))
    assert prep is None
    assert manual_compaction_error(path, prep) == ALREADY_COMPACTED


def _continue(path: list[Entry], *entries: tuple[str, str, str]) -> list[Entry]:
    out = list(path)
    for entry_id, role, text in entries:
        payload = {
            "type": "message",
            "id": entry_id,
            "parentId": out[-1].id,
            "timestamp": "2026-07-29T09:06:00Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 6},
        }
        out.append(Entry(seq=len(out), id=entry_id, parent_id=out[-1].id, type="message", payload=payload))
    return out


def test_second_compaction_summarises_previous_kept_tail_again() -> None:
    path = _continue(
        _worked_example(), ("U5", "user", "Run the suite again"), ("A7", "assistant", "All green")
    )
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=4))
    assert prep is not None
    assert prep.first_kept_entry_id == "U5"
    assert _ids(prep.history) == ["U4", "A6"]
    assert prep.previous_summary == "目标是完成认证改造；当前采用 session cookie；测试已补充。"


def test_long_turn_is_split_with_no_prior_history() -> None:
    long_text = "step " * 40
    path = _continue(
        _worked_example(),
        ("U5", "user", "Refactor the cookie handling"),
        ("A7", "assistant", long_text),
        ("A8", "assistant", long_text),
        ("A9", "assistant", long_text),
        ("A10", "assistant", long_text),
    )
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=50))
    assert prep is not None
    assert prep.is_split_turn
    assert prep.first_kept_entry_id == "A10"
    assert _ids(prep.history) == ["U4", "A6"]
    assert _ids(prep.turn_prefix) == ["U5", "A7", "A8", "A9"]


def test_nothing_to_compact_when_everything_fits() -> None:
    path = _continue(_worked_example()[:1], ("U9", "assistant", "hi"))
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=100_000))
    assert prep is None
    assert manual_compaction_error(path, prep) == NOTHING_TO_COMPACT
