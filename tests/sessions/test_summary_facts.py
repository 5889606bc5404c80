"""What a summary in the context says it replaced ("replaced 5 messages, 64k tokens") equals a plain walk
of the stored tree by parent pointers, on random trees with rewinds, compactions and branch summaries,
on PostgreSQL and on the embedded SQLite default (a child process)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings

from sessions_app import services
from sessions_app.models import ChatSession, Entry
from sessions_app.summary_facts import replaced_by_summaries
from tests import procs
from tests.fuzz.strategies import SessionFile, session_files

pytestmark = pytest.mark.django_db


def walked(session: ChatSession) -> dict[str, int]:
    """Return {summary id: messages it replaced}, by walking parent pointers of the stored rows."""
    rows = {
        r.entry_id: r
        for r in Entry.objects.filter(session=session, depth__isnull=False).order_by("seq")
        if r.entry_id is not None
    }

    def path(entry: Entry) -> list[Entry]:
        out = [entry]
        while out[-1].parent_id is not None and out[-1].parent_id in rows:
            out.append(rows[out[-1].parent_id])
        return out[::-1]

    def messages(end: Entry, low: int, high: int) -> int:
        return sum(1 for e in path(end) if e.type == "message" and low <= (e.depth or 0) <= high)

    def by_id(value: Any) -> Entry | None:
        return rows.get(value) if isinstance(value, str) else None

    out: dict[str, int] = {}
    for row in rows.values():
        payload = row.payload()
        if row.type == "compaction":
            kept = by_id(payload.get("firstKeptEntryId"))
            if kept is None:
                continue
            earlier = [e for e in path(row)[:-1] if e.type == "compaction"]
            start = by_id(earlier[-1].payload().get("firstKeptEntryId")) if earlier else None
            low = start.depth if start is not None and start.depth is not None else 0
            out[row.entry_id] = messages(kept, low, (kept.depth or 0) - 1)
        elif row.type == "branch_summary":
            end = by_id(payload.get("fromId"))
            if end is None:
                continue
            parent = by_id(row.parent_id)
            shared = {e.entry_id for e in path(parent)} if parent is not None else set()
            ancestor = max((e.depth or 0 for e in path(end) if e.entry_id in shared), default=-1)
            out[row.entry_id] = messages(end, ancestor + 1, end.depth or 0)
    return out


def compare(session: ChatSession) -> int:
    """Assert the facts equal the walk; return how many summaries were compared."""
    expected = walked(session)
    summaries = list(
        Entry.objects.filter(session=session, type__in=("compaction", "branch_summary")).values_list(
            "entry_id", flat=True
        )
    )
    facts = replaced_by_summaries(session, summaries)
    assert {k: v["messages"] for k, v in facts.items()} == expected
    return len(expected)


FILES = session_files(version=3, max_entries=40, cycles=False, garbage=False)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(file=FILES)
def test_what_a_summary_replaced_equals_a_walk_of_the_tree(
    file: SessionFile, user: Callable[..., Any]
) -> None:
    try:
        stored = services.import_jsonl(actor=user(), data=file.data, filename="facts.jsonl").session
    except services.InvalidSessionFile:
        return
    compare(stored)


def deep_branched_file() -> bytes:
    """A session of 40 rewinds (so a path crosses many branch points) with two compactions on it and a
    branch summary of a long abandoned branch."""
    lines = [
        {"type": "session", "version": 3, "id": "deep", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/"}
    ]
    parent: str | None = None
    n = 0

    def add(kind: str, **fields: Any) -> str:
        nonlocal parent, n
        n += 1
        entry = {"type": kind, "id": f"x{n}", "parentId": parent, "timestamp": "2026-03-01T10:00:01.000Z"}
        if kind == "message":
            role = "user" if n % 2 else "assistant"
            content: Any = f"turn {n}" if role == "user" else [{"type": "text", "text": f"turn {n}"}]
            entry["message"] = {"role": role, "content": content, "timestamp": 1}
        entry |= fields
        lines.append(entry)
        parent = entry["id"]
        return str(entry["id"])

    kept: list[str] = []
    for block in range(40):
        fork_point = add("message")
        add("message")  # the sibling left behind at each rewind
        parent = fork_point
        kept.append(add("message"))
        if block in (15, 30):
            add("compaction", summary="So far.", firstKeptEntryId=kept[-3], tokensBefore=64_000)
    leaf = parent
    for _ in range(6):
        add("message")
    parent = kept[20]
    add("branch_summary", summary="We tried X.", fromId=leaf)
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_a_path_through_many_branch_points(user: Callable[..., Any]) -> None:
    stored = services.import_jsonl(actor=user(), data=deep_branched_file(), filename="deep.jsonl").session
    assert compare(stored) == 3
    first, second = Entry.objects.filter(session=stored, type="compaction").order_by("seq")
    facts = replaced_by_summaries(stored, [first.entry_id, second.entry_id])
    # The second compaction replaced what lies between the first one's kept entry and its own: the
    # first one's kept message, two messages on the path for each of 14 blocks, and a fork point.
    assert facts[second.entry_id] == {"messages": 30, "tokens": 64_000, "offline": False}


EMBEDDED = r"""
import json, sys
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
call_command("migrate", verbosity=0)
from sessions_app import services
from tests.sessions.test_summary_facts import compare, deep_branched_file
owner = get_user_model().objects.create_user("facts")
stored = services.import_jsonl(actor=owner, data=deep_branched_file(), filename="deep.jsonl").session
print(json.dumps(compare(stored)))
"""


def test_the_embedded_default_gives_the_same_answer(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the child process is the SQLite run")
    assert procs.run_embedded(EMBEDDED, tmp_path) == 3
