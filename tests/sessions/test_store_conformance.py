"""Import each conformance session into the database, then project from the database: Pi's answers hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compaction_app.sessiontool.common import estimate_view, llm_view, projection_messages
from pitree.messages import convert_to_llm
from pitree.tokens import estimate_context_tokens
from sessions_app import queries, services
from tests.conformance.compare import ConformanceRun, differences, run_params

pytestmark = pytest.mark.django_db


def _db_projection(session: Any, leaf_arg: str | None, explicit_null: bool) -> dict[str, Any]:
    if explicit_null:
        leaf_id = None
    elif leaf_arg is not None and queries.Entry.objects.filter(session=session, entry_id=leaf_arg).exists():
        leaf_id = leaf_arg
    else:
        leaf_id = session.leaf_entry_id
    view = queries.context_for_leaf(session, leaf_id, use_session_leaf=False)
    path_ids: list[str | None] = []
    if view.leaf is not None:
        seqs = queries.path_seqs(session, view.leaf)
        by_seq = dict(
            queries.Entry.objects.filter(session=session, seq__in=seqs).values_list("seq", "entry_id")
        )
        path_ids = [by_seq[s] for s in seqs]
    projection = view.projection
    return {
        "effectiveLeafId": leaf_id,
        "path": path_ids,
        "contextEntries": [pe.entry.id for pe in projection.entries],
        "messages": projection_messages(projection),
        "llm": [llm_view(m) for m in convert_to_llm(projection.messages)],
        "thinkingLevel": projection.thinking_level,
        "model": projection.model,
        "estimateContextTokens": estimate_view(estimate_context_tokens(projection.messages)),
        "estimateProjectedContextTokens": estimate_view(view.estimate),
    }


@pytest.mark.parametrize("run", run_params("project"))
def test_projection_from_database_matches_pi(run: ConformanceRun, user: Any) -> None:
    expected = run.expected
    assert isinstance(expected, dict)
    path = Path(run.argv[1])
    if "error" in expected or path.stat().st_size == 0:
        with pytest.raises(services.InvalidSessionFile):
            services.import_jsonl(actor=user(), data=path.read_bytes(), filename=path.name)
        return
    result = services.import_jsonl(actor=user(), data=path.read_bytes(), filename=path.name)
    args = list(run.argv[2:])
    explicit_null = bool(args) and args[0] == "null"
    ours = _db_projection(result.session, args[0] if args and not explicit_null else None, explicit_null)
    wanted = {key: expected[key] for key in ours}
    assert not differences(wanted, ours), differences(wanted, ours)[:5]
