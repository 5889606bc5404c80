"""Which reported usage Pi's estimate sets aside, and the entry that made it stale (DB-free)."""

from __future__ import annotations

import json
from typing import Any

from pitree.projection import project
from pitree.session import load_session
from pitree.tokens import estimate_projected_context_tokens, set_aside_usage
from tests.factories import HEADER, assistant_message, user_message

USAGE = {"input": 5000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 5100}


def at(entries: list[dict[str, Any]], leaf: str) -> tuple[Any, Any]:
    tree = load_session("\n".join(json.dumps(e) for e in [HEADER, *entries]) + "\n").tree
    path = tree.path(leaf)
    projection = project(path)
    return set_aside_usage(projection, path), estimate_projected_context_tokens(projection, path)


def test_a_compaction_after_the_report_sets_it_aside() -> None:
    entries = [
        user_message("u1", None, "first"),
        assistant_message("a1", "u1", "answered", usage=USAGE),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a1",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "summary": "## Goal\n- answer",
            "firstKeptEntryId": "a1",
            "tokensBefore": 5100,
        },
    ]
    usage, estimate = at(entries, "c1")
    assert usage is not None and (usage.tokens, usage.entry_id) == (5100, "a1")
    assert (usage.reset_id, usage.reset_type) == ("c1", "compaction")
    assert estimate.last_usage_index is None and estimate.tokens < 5100


def test_a_trusted_report_is_not_set_aside() -> None:
    entries = [user_message("u1", None, "first"), assistant_message("a1", "u1", "answered", usage=USAGE)]
    usage, estimate = at(entries, "a1")
    assert usage is None and estimate.tokens == 5100
