"""Random trees imported into the database project exactly as the in-memory tree projects them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction_app.sessiontool.common import estimate_view, projection_messages
from pitree.jsjson import INVALID, parse_json
from pitree.projection import project
from pitree.session import load_session
from pitree.tokens import estimate_projected_context_tokens
from sessions_app import queries, services

from .strategies import SessionFile, session_files

pytestmark = pytest.mark.django_db


def as_imported(text: str) -> str:
    """The file as import keeps it: after the header, lines that are JSON but not objects are skipped.

    Pi keeps them as id-less roots, which shifts every later line's position (README, deliberate
    differences); the reference tree must number entries as the store does.
    """
    kept: list[str] = []
    seen_json = False
    for line in text.split("\n"):
        value = parse_json(line) if line.strip() else INVALID
        if seen_json and value is not INVALID and not isinstance(value, dict):
            continue
        seen_json = seen_json or value is not INVALID
        kept.append(line)
    return "\n".join(kept)


def _view(projection: Any, estimate: Any) -> dict[str, Any]:
    return {
        "contextEntries": [(pe.entry.seq, pe.entry.id) for pe in projection.entries],
        "messages": projection_messages(projection),
        "thinkingLevel": projection.thinking_level,
        "model": projection.model,
        "estimate": estimate_view(estimate),
    }


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(file=session_files(version=None, max_entries=30), picks=st.lists(st.integers(0, 10**6), max_size=6))
def test_database_projection_equals_in_memory(
    file: SessionFile, picks: list[int], user: Callable[..., Any]
) -> None:
    session = load_session(as_imported(file.text))
    tree = session.tree
    result = services.import_jsonl(actor=user(), data=file.data, filename="fuzz.jsonl")
    stored = result.session
    # v1 files get fresh random ids on each load: read the tree back from the store to name leaves.
    if session.file.migrated:
        tree = queries.load_tree(stored)
    assert stored.leaf_entry_id == tree.last_leaf_id()
    ids = list(tree.by_id)
    leaves = [tree.last_leaf_id(), *(ids[p % len(ids)] for p in picks if ids)]
    for leaf_id in leaves:
        if leaf_id is None:
            continue
        path = tree.path(leaf_id)
        memory = project(path)
        view = queries.context_for_leaf(stored, leaf_id, use_session_leaf=False)
        assert view.leaf is not None
        assert queries.path_seqs(stored, view.leaf) == [e.seq for e in path]
        ours = _view(memory, estimate_projected_context_tokens(memory, path))
        theirs = _view(view.projection, view.estimate)
        assert theirs == ours, leaf_id
