"""The browser's tree lists children oldest first, depth first, as Pi's tree does."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sessions_app import services
from sessions_app.tree_overview import build_tree_overview

pytestmark = pytest.mark.django_db


def _line(entry_id: str, parent: str | None, second: int | None) -> str:
    stamp: Any = None if second is None else f"2026-03-01T10:00:{second:02d}.000Z"
    return json.dumps(
        {"type": "custom", "id": entry_id, "parentId": parent, "timestamp": stamp, "customType": "x"}
    )


def test_a_branch_older_than_the_continuation_is_drawn_first(user: Callable[..., Any]) -> None:
    header = json.dumps(
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}
    )
    lines = [
        header,
        _line("a", None, 1),
        _line("late", "a", 30),  # first child in the file: it continues a's run
        _line("late2", "late", 31),
        _line("early", "a", 10),  # a branch, but older than "late"
        _line("early2", "early", 11),
        _line("epoch", "a", None),  # new Date(null) is 1970: oldest of all
    ]
    stored = services.import_jsonl(
        actor=user(), data=("\n".join(lines) + "\n").encode(), filename="o.jsonl"
    ).session
    drawn = []
    for item in build_tree_overview(stored)["items"]:
        drawn += [item["id"]] if item["kind"] == "node" else [item["firstId"], item["lastId"]]
    order = [i for n, i in enumerate(drawn) if n == 0 or drawn[n - 1] != i]
    assert order == ["a", "epoch", "early", "early2", "late", "late2"]
