"""The context read from running sums equals the full projection: the estimate, the counts, the
breakdown and the messages at both ends, at every entry of random sessions; and older entries get their
sums from the backfill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import caches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitree.tokens import set_aside_usage
from sessions_app import context_reads, queries, services
from sessions_app.api.serializers import context_page_payload, context_payload, set_aside_json
from sessions_app.models import Entry, EntrySums
from sessions_app.services.context_sums import backfill_session
from tests.factories import assistant_message as assistant
from tests.factories import session_file
from tests.factories import user_message as user
from tests.fuzz.strategies import SessionFile, session_files

pytestmark = pytest.mark.django_db

WINDOW = 200_000
COMPARED = ("messageCount", "breakdown", "estimate", "contextWindow", "model", "thinkingLevel")


def _full(session: Any, leaf_id: str, head: int, tail: int) -> dict[str, Any]:
    view = queries.context_for_leaf(session, leaf_id, use_session_leaf=False)
    return context_payload(view, WINDOW, head=head, tail=tail, llm=True)


def _fast(session: Any, leaf_id: str, head: int, tail: int) -> dict[str, Any] | None:
    page = context_reads.context_page(session, leaf_id, head=head, tail=tail)
    if page is None:
        return None
    # As the view does: a shape the sums cannot tell the set-aside usage of asks the projection.
    aside = None
    if not page.totals.set_aside_known:
        view = queries.context_for_leaf(session, leaf_id, use_session_leaf=False)
        aside = set_aside_json(set_aside_usage(view.projection, view.path))
    return context_page_payload(page, WINDOW, llm=True, set_aside=aside)


def _same(session: Any, leaf_id: str, head: int, tail: int) -> bool:
    """Assert the page from sums equals the projection's; return False when the sums declined."""
    fast = _fast(session, leaf_id, head, tail)
    if fast is None:
        return False
    full = _full(session, leaf_id, head, tail)
    for key in COMPARED:
        assert fast[key] == full[key], (leaf_id, key)
    shown = [(m["entryId"], m["message"]) for m in fast["messages"]]
    assert shown == [(m["entryId"], m["message"]) for m in full["messages"]], leaf_id
    assert fast["llmMessages"] == full["llmMessages"], leaf_id
    assert (fast["skippedMessages"], fast["skippedAfter"]) == (full["skippedMessages"], full["skippedAfter"])
    return True


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    file=session_files(version=3, max_entries=40),
    head=st.integers(0, 4),
    tail=st.integers(0, 6),
)
def test_sums_give_the_projections_answer_at_every_entry(
    file: SessionFile, head: int, tail: int, user: Callable[..., Any]
) -> None:
    try:
        stored = services.import_jsonl(actor=user(), data=file.data, filename="sums.jsonl").session
    except services.InvalidSessionFile:
        return  # a file the store refuses (a NUL, a lone surrogate) has no context to compare
    leaves = Entry.objects.filter(session=stored, depth__isnull=False).values_list("entry_id", flat=True)
    served = 0
    for leaf_id in dict.fromkeys(leaves):
        served += _same(stored, leaf_id, head, tail)
    # Declined only for an edit that names the usage anchor or what follows it; most paths have none.
    assert served >= len(set(leaves)) // 2


def _conversation(n: int, *, edits: bool = False, compact_at: int | None = None) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "sys",
            "parentId": None,
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": {
                "role": "system",
                "content": "You help.",
                "timestamp": 1,
                "toolsAdded": [{"name": "read"}],
            },
        }
    ]
    parent = "sys"
    for i in range(n):
        make = user if i % 2 == 0 else assistant
        entries.append(make(f"e{i}", parent, f"message number {i} " * (1 + i % 5)))
        parent = f"e{i}"
        if compact_at is not None and i == compact_at:
            entries.append(
                {
                    "type": "compaction",
                    "id": "c1",
                    "parentId": parent,
                    "timestamp": "2026-01-02T03:04:05.000Z",
                    "summary": "What happened so far.",
                    "firstKeptEntryId": f"e{i - 4}",
                    "tokensBefore": 1000,
                    "systemMessage": {"role": "system", "content": "You help.", "timestamp": 1},
                }
            )
            parent = "c1"
        if edits and i in (n // 3, n // 2):
            entries.append(
                {
                    "type": "context_edit",
                    "id": f"x{i}",
                    "parentId": parent,
                    "timestamp": "2026-01-02T03:04:05.000Z",
                    "targetId": f"e{i - 3}",
                    "replacement": None if i == n // 3 else {"content": "shorter"},
                }
            )
            parent = f"x{i}"
    return entries


@pytest.mark.parametrize(
    ("name", "entries"),
    [
        ("plain", _conversation(60)),
        ("edited", _conversation(60, edits=True)),
        ("compacted", _conversation(60, compact_at=40)),
        ("compacted and edited", _conversation(60, edits=True, compact_at=25)),
    ],
)
def test_sums_hold_through_compactions_edits_and_appends(
    name: str, entries: list[dict[str, Any]], api_client: Any
) -> None:
    stored = services.import_jsonl(actor=api_client.user, data=session_file(entries)).session
    for leaf in ("e59", "e30", "e10", "sys"):
        assert _same(stored, leaf, 3, 5), (name, leaf)
    # Appends through the API (the chain statement on PostgreSQL) carry the sums on.
    url = f"/api/sessions/{stored.pk}/append/"
    answer = api_client.post(
        url, {"entries": [{"type": "message", "message": {"role": "user", "content": "more"}}]}, format="json"
    )
    assert answer.status_code == 201, answer.content
    stored.refresh_from_db()
    assert _same(stored, stored.leaf_entry_id, 3, 5), name


def test_older_entries_get_their_sums_from_the_backfill(api_client: Any) -> None:
    stored = services.import_jsonl(
        actor=api_client.user, data=session_file(_conversation(30, edits=True))
    ).session
    before = _fast(stored, "e29", 2, 4)
    EntrySums.objects.filter(session=stored).delete()  # as stored before the sums existed
    assert _fast(stored, "e29", 2, 4) is None  # the reader projects in full meanwhile
    url = f"/api/sessions/{stored.pk}/context/"
    slow = api_client.get(url, {"leaf": "e29", "head": 2, "tail": 4, "llm": "false"}).json()
    assert "contextEntries" in slow  # the full projection answered
    assert backfill_session(stored.pk) == Entry.objects.filter(session=stored).count() == 33
    assert backfill_session(stored.pk) == 0  # a second run finds the session done
    assert _fast(stored, "e29", 2, 4) == before
    # An answer cached before the backfill is the full projection's, equal in every compared field; a new
    # one is read from the sums.
    cached = api_client.get(url, {"leaf": "e29", "head": 2, "tail": 4, "llm": "false"}).json()
    assert all(cached[key] == slow[key] for key in COMPARED)
    caches["shared"].clear()
    fast = api_client.get(url, {"leaf": "e29", "head": 2, "tail": 4, "llm": "false"}).json()
    assert "contextEntries" not in fast
    for key in COMPARED:
        assert fast[key] == slow[key], key


def test_pages_towards_the_head_by_depth_meet_the_head(api_client: Any) -> None:
    stored = services.import_jsonl(
        actor=api_client.user, data=session_file(_conversation(50, edits=True, compact_at=30))
    ).session
    url = f"/api/sessions/{stored.pk}/context/"
    first = api_client.get(url, {"head": 3, "tail": 5, "llm": "false"}).json()
    full = api_client.get(url).json()
    seen = [m["entryId"] for m in first["messages"][3:]]
    gap = first["skippedMessages"]
    cursor = first["messages"][3]["depth"]
    while gap:
        page = api_client.get(
            url, {"head": 0, "tail": min(4, gap), "beforeDepth": cursor, "llm": "false"}
        ).json()
        assert page["messages"], gap
        seen = [m["entryId"] for m in page["messages"]] + seen
        gap -= len(page["messages"])
        cursor = page["messages"][0]["depth"]
    # Head, every page and the tail are the whole context in order, each message once.
    assert [m["entryId"] for m in first["messages"][:3]] + seen == [m["entryId"] for m in full["messages"]]
    assert api_client.get(url, {"beforeDepth": 3}).status_code == 400  # only with tail
    both = api_client.get(url, {"tail": 3, "before": 2, "beforeDepth": 3})
    assert both.status_code == 400 and "beforeDepth" in both.json()["detail"]


def test_the_page_reads_a_few_rows_however_long_the_path(api_client: Any) -> None:
    stored = services.import_jsonl(actor=api_client.user, data=session_file(_conversation(3000))).session
    page = context_reads.context_page(stored, "e2999", head=10, tail=40)
    assert page is not None and page.totals.message_count == 3001
    assert page.rows_read < 120  # the two ends, not the path
