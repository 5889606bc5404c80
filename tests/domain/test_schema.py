"""The typed shapes of Pi's lines agree with the lines Pi writes, and the typed views pick by ``type``."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from pitree.entries import entry_from_value
from pitree.schema import PiEntry, PiMessage

DEMO = Path(__file__).resolve().parents[2] / "demo"


def _declared() -> dict[str, dict[str, object]]:
    """Each declared line type's ``type`` value and its fields with their types."""
    out = {}
    for shape in typing.get_args(PiEntry):
        hints = typing.get_type_hints(shape)
        (kind,) = typing.get_args(hints["type"])  # Literal["compaction"] -> "compaction"
        out[kind] = hints
    return out


def _roles() -> dict[str, dict[str, object]]:
    out = {}
    for shape in typing.get_args(PiMessage):
        hints = typing.get_type_hints(shape)
        (role,) = typing.get_args(hints["role"])
        out[role] = hints
    return out


def test_every_line_of_the_demo_sessions_fits_its_declared_shape() -> None:
    declared, roles = _declared(), _roles()
    seen: set[str] = set()
    for path in sorted(DEMO.glob("*.jsonl")):
        for line in path.read_text().splitlines()[1:]:
            value = json.loads(line)
            kind = value["type"]
            seen.add(kind)
            assert kind in declared, f"{path.name}: {kind} has no declared shape"
            undeclared = set(value) - set(declared[kind])
            assert undeclared == set(), f"{path.name}: {kind} holds undeclared fields {undeclared}"
            if kind == "message":
                message = value["message"]
                extra = set(message) - set(roles[message["role"]])
                assert extra == set(), f"{path.name}: a {message['role']} message holds {extra}"
    assert {"message", "compaction", "branch_summary"} <= seen


def test_a_typed_view_is_given_only_for_its_own_type() -> None:
    compaction = entry_from_value(0, {"type": "compaction", "id": "c", "parentId": None, "summary": "s"})
    label = entry_from_value(1, {"type": "label", "id": "l", "parentId": "c", "targetId": "c", "label": "x"})
    odd = entry_from_value(2, ["not", "an", "object"])
    assert compaction.as_compaction() == {"type": "compaction", "id": "c", "parentId": None, "summary": "s"}
    assert compaction.as_label() is None and label.as_compaction() is None
    assert label.as_label() is not None and label.as_label()["targetId"] == "c"  # type: ignore[index]
    assert odd.as_message() is None and odd.as_compaction() is None
