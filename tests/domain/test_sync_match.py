"""The identity rules of sync, line by line: known, new, conflict, leaf markers and migrated lines."""

from __future__ import annotations

import json
from typing import Any

from pitree.sync_match import Line, content_key, plan_lines


def _line(value: dict[str, Any], number: int = 1) -> Line:
    return Line(number, json.dumps(value, separators=(",", ":")), value)


def _msg(entry_id: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t",
            "message": {"role": "user", "content": text}}  # fmt: skip


def _marker(entry_id: str, parent: str) -> dict[str, Any]:
    return {"type": "custom", "customType": "piweb.leaf", "data": {"leafId": parent}, "id": entry_id,
            "parentId": parent, "timestamp": "t"}  # fmt: skip


def test_known_lines_are_skipped_new_ones_kept_and_other_bytes_are_conflicts() -> None:
    a, b, c = _line(_msg("a", None)), _line(_msg("b", "a")), _line(_msg("c", "a"))
    plan = plan_lines([a, b, c], stored={"a": {a.raw}, "b": {"other bytes"}}, aliases={})
    assert plan.known == 1 and plan.conflicts == ["b"] and [raw for raw, _ in plan.new] == [c.raw]


def test_a_marker_is_dropped_and_its_children_are_stored_under_its_node() -> None:
    a = _line(_msg("a", None))
    plan = plan_lines(
        [a, _line(_marker("m1", "a")), _line(_marker("m2", "m1")), _line(_msg("x", "m2"))],
        stored={"a": {a.raw}},
        aliases={},
    )
    assert plan.markers == 2 and plan.aliases == {"m1": "a", "m2": "a"}
    [(raw, value)] = plan.new
    assert value["parentId"] == "a" and json.loads(raw)["parentId"] == "a"
    assert raw == _line(_msg("x", "a")).raw  # every other byte as it was written
    resent = plan_lines([_line(_msg("x", "m2"))], stored={"x": {raw}}, aliases=plan.aliases)
    assert resent.known == 1 and resent.conflicts == []  # a resend of the child is known, not a conflict


def test_a_file_ending_at_a_marker_moves_the_leaf_to_its_node() -> None:
    a, b = _line(_msg("a", None)), _line(_msg("b", "a"))
    plan = plan_lines([a, b, _line(_marker("m", "a"))], stored={"a": {a.raw}, "b": {b.raw}}, aliases={})
    assert plan.leaf_marker == "a" and plan.new == []


def test_migrated_lines_are_recognised_by_content_at_the_same_place() -> None:
    stored_a, stored_b = _msg("s1", None, "q"), _msg("s2", "s1", "a")
    by_content = {content_key(stored_a): "s1", content_key(stored_b): "s2"}
    lines = [_line(_msg("p1", None, "q")), _line(_msg("p2", "p1", "a")), _line(_msg("p3", "p2", "new"))]
    plan = plan_lines(lines, stored={}, aliases={}, by_content=by_content)
    assert plan.aliases == {"p1": "s1", "p2": "s2"} and plan.known == 2
    [(_, value)] = plan.new
    assert value["id"] == "p3" and value["parentId"] == "s2"
    # The same content elsewhere in the tree is not the same line.
    elsewhere = plan_lines([_line(_msg("p9", "zz", "a"))], stored={}, aliases={}, by_content=by_content)
    assert len(elsewhere.new) == 1 and elsewhere.aliases == {}
