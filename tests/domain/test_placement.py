"""The one append step, without a database: which entries may be stored and where each one lands."""

from __future__ import annotations

from typing import Any

import pytest

from pitree.entries import entry_from_value
from pitree.placement import (
    Counters,
    InvalidEntries,
    ParentFacts,
    place,
    prepare,
    relative_chain,
    resolve,
)
from pitree.storable import Unstorable, check_fields
from pitree.tree import SessionTree


def entry(entry_id: str | None, parent: str | None, kind: str = "message", **fields: Any) -> Any:
    value: dict[str, Any] = {"type": kind, "parentId": parent, **fields}
    if entry_id is not None:
        value["id"] = entry_id
    return entry_from_value(0, value)


def empty() -> Counters:
    return Counters(0, 0, 0, 0, "", None, None)


def test_a_chain_extends_one_segment_and_a_second_child_opens_a_branch() -> None:
    batch = [entry("a", None), entry("b", "a"), entry("c", "b"), entry("d", "a")]
    placed = place(batch, {}, empty())
    assert [(p.seq, p.parent_seq, p.depth, p.segment) for p in placed.rows] == [
        (0, None, 0, 0),
        (1, 0, 1, 0),
        (2, 1, 2, 0),
        (3, 0, 1, 1),
    ]
    segments = placed.segments
    assert (segments[0].tip_seq, segments[0].tip_depth) == (2, 2)
    assert (segments[1].parent_index, segments[1].start_depth, segments[1].first_seq) == (0, 1, 3)
    assert placed.counters.leaf_id == "d" and placed.counters.leaf_seq == 3
    assert (placed.counters.next_seq, placed.counters.next_segment, placed.counters.entry_count) == (4, 2, 4)


def test_appends_after_stored_entries_follow_the_parents_facts() -> None:
    tip = ParentFacts(seq=9, depth=4, segment=2, compaction_seq=5, model_seq=7, thinking_seq=None, tip=True)
    inner = ParentFacts(
        seq=3, depth=2, segment=0, compaction_seq=None, model_seq=1, thinking_seq=None, tip=False
    )
    counters = Counters(10, 3, 10, 4, "old", "t", 9)
    batch = [
        entry("x", "t", message={"role": "assistant"}),
        entry("y", "i", "thinking_level_change"),
        entry("z", "gone", "session_info", name="  New  "),
    ]
    placed = place(batch, {"t": tip, "i": inner}, counters)
    x, y, z = placed.rows
    # Under the tip: the same segment, its own model anchor, the compaction inherited.
    assert (x.seq, x.parent_seq, x.depth, x.segment, x.compaction_seq, x.model_seq) == (10, 9, 5, 2, 5, 10)
    assert placed.segments[2].opened is False and placed.segments[2].tip_seq == 10
    # Under an entry that is not its segment's tip: a new segment; it is its own thinking anchor.
    assert (y.parent_seq, y.depth, y.segment, y.model_seq, y.thinking_seq) == (3, 3, 3, 1, 11)
    # An unknown parent: a new root.
    assert (z.parent_seq, z.depth, z.segment) == (None, 0, 4)
    assert placed.counters.name == "New" and placed.counters.message_count == 5


def test_lines_without_an_id_take_a_seq_and_nothing_else() -> None:
    placed = place([entry_from_value(0, [1, 2]), entry("a", None)], {}, empty())
    assert placed.rows[0].depth is None and placed.rows[0].segment is None
    assert placed.counters.leaf_id == "a" and placed.counters.leaf_seq == 1


def test_a_whole_file_and_its_appends_agree_on_every_fact_but_segment_numbers() -> None:
    batch = [
        entry("a", None),
        entry("b", "a", "compaction"),
        entry("c", "b"),
        entry("d", "a", "model_change"),
        entry("e", "d"),
        entry("f", "c"),
    ]
    placed = place(batch, {}, empty())
    facts, _ = SessionTree(batch).path_facts()

    def anchor(seq: int) -> int | None:
        return None if seq < 0 else seq

    whole = [(f.depth, anchor(f.compaction), anchor(f.model), anchor(f.thinking)) for f in facts]
    assert [(p.depth, p.compaction_seq, p.model_seq, p.thinking_seq) for p in placed.rows] == whole


def test_a_chain_relative_to_its_parent_is_a_list_of_offsets() -> None:
    spots = relative_chain([entry("p", None), entry("q", "p", "compaction"), entry("r", "q")])
    assert [(s.seq, s.parent_seq, s.depth, s.compaction_seq) for s in spots] == [
        (0, -1, 0, None),
        (1, 0, 1, 1),
        (2, 1, 2, 1),
    ]


def test_prepare_and_resolve_refuse_what_the_tree_cannot_hold() -> None:
    with pytest.raises(InvalidEntries, match="no entries"):
        prepare([])
    with pytest.raises(InvalidEntries, match="entry 1: an entry must be a JSON object"):
        prepare([{"type": "x"}, 3])
    with pytest.raises(InvalidEntries, match="'type' must be a non-empty string"):
        prepare([{"type": "session"}])
    with pytest.raises(InvalidEntries, match="entry 1: id 'a' already exists"):
        prepare([{"type": "x", "id": "a"}, {"type": "x", "id": "a"}])
    prepared = prepare([{"type": "x", "id": "a"}, {"type": "x"}, {"type": "x", "parentId": "a"}])
    values = resolve(prepared, "leaf", {"leaf"})
    assert [v["parentId"] for v in values] == ["leaf", "a", "a"]
    assert values[1]["id"] not in {"a", "leaf"} and values[1]["timestamp"]
    with pytest.raises(InvalidEntries, match="entry 0: parent 'nope' is not an entry"):
        resolve(prepare([{"type": "x", "parentId": "nope"}]), None, set())
    with pytest.raises(InvalidEntries, match="entry 0: id 'leaf' already exists"):
        resolve(prepare([{"type": "x", "id": "leaf"}]), "leaf", {"leaf"})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"id": "i" * 256}, "entry 0: 'id' is longer than 255 characters"),
        ({"parentId": "\ud800"}, "entry 0: 'parentId' holds a NUL character or a lone surrogate"),
        ({"message": {"model": "m" * 256}}, "entry 0: 'message.model' is longer than 255"),
        ({"label": "l" * 1001}, "entry 0: 'label' is longer than 1000"),
    ],
)
def test_key_fields_past_their_caps_are_named(value: dict[str, Any], message: str) -> None:
    with pytest.raises(Unstorable, match=message.replace(".", r"\.")):
        check_fields({"type": "x", **value}, "entry 0")
    check_fields({"type": "x", "id": "i" * 255, "data": "d" * 100_000, "label": 7}, "entry 0")
