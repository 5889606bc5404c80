"""Bulk writes keep the planner's statistics current, so searches and lookups right after an import pick
the right plans (a search table the planner believes empty made search ten times slower at 1M entries)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection

from sessions_app import services
from sessions_app.models import ChatSession, Entry, EntrySearch
from sessions_app.services import importing
from sync.services import Cursor, sync_lines
from tests.factories import HEADER, conversation, line, session_file

pytestmark = pytest.mark.django_db(transaction=True)


def believed_rows() -> dict[str, float]:
    """What the planner believes each table holds."""
    tables = [Entry._meta.db_table, EntrySearch._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)", [tables])
        return {name: max(tuples, 0) for name, tuples in cursor.fetchall()}


def analyze_now() -> None:
    with connection.cursor() as cursor:
        for model in (Entry, EntrySearch):
            cursor.execute(f"ANALYZE {model._meta.db_table}")


@pytest.fixture
def owner(user: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A user whose imports of 10 entries or more are bulk writes (20k in production)."""
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    monkeypatch.setattr(importing, "ANALYZE_AFTER", 10)
    return user()


def test_an_import_that_outgrows_the_statistics_refreshes_them(owner: Any) -> None:
    analyze_now()
    small = conversation(2)  # below the threshold: no ANALYZE
    services.import_jsonl(actor=owner, data=session_file(small, {**HEADER, "id": "small"}))
    assert believed_rows() == {Entry._meta.db_table: 0, EntrySearch._meta.db_table: 0}
    big = conversation(12)
    services.import_jsonl(actor=owner, data=session_file(big, {**HEADER, "id": "big"}))
    believed = believed_rows()
    assert believed[Entry._meta.db_table] == Entry.objects.count() == len(small) + len(big)
    assert believed[EntrySearch._meta.db_table] == EntrySearch.objects.count() > 0


def test_a_big_import_into_a_big_table_is_a_session_the_statistics_must_learn(owner: Any) -> None:
    services.import_jsonl(actor=owner, data=session_file(conversation(50), {**HEADER, "id": "large"}))
    before = believed_rows()[Entry._meta.db_table]
    assert before == Entry.objects.count() > 100
    # Far less than a fifth of the table, yet a whole session the planner has never seen.
    services.import_jsonl(actor=owner, data=session_file(conversation(6), {**HEADER, "id": "newer"}))
    assert believed_rows()[Entry._meta.db_table] == Entry.objects.count() > before


def test_syncs_that_add_up_refresh_them_too(owner: Any) -> None:
    analyze_now()
    body = [line(e) for e in conversation(12)]
    header = line({**HEADER, "id": "synced"})
    sync_lines(
        actor=owner,
        header_line=header,
        start=Cursor(0, None, None),
        end_lines=len(body),
        end_bytes=None,
        lines=body,
    )
    assert believed_rows()[EntrySearch._meta.db_table] == EntrySearch.objects.count() > 0


def test_an_import_stands_when_its_statistics_cannot_be_refreshed(
    owner: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse_analyze(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("ANALYZE"):
            raise OperationalError("canceling statement due to lock timeout")
        return execute(sql, params, many, context)

    entries = conversation(12)
    with connection.execute_wrapper(refuse_analyze):
        result = services.import_jsonl(actor=owner, data=session_file(entries, {**HEADER, "id": "kept"}))
    assert result.created and Entry.objects.filter(session=result.session).count() == len(entries)
    assert "could not refresh the planner statistics" in caplog.text


def test_many_small_imports_keep_the_session_table_known_to_the_planner(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = ChatSession._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {sessions}")

    def believed() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE relname = %s", [sessions])
            return float(cursor.fetchone()[0])

    assert believed() == 0
    monkeypatch.setattr(importing, "SESSIONS_ANALYZE_AFTER", 3)
    # Each import is far below the entry threshold; together they are sessions the planner never saw.
    for n in range(12):
        services.import_jsonl(actor=owner, data=session_file(conversation(2), {**HEADER, "id": f"s{n}"}))
        if believed() > 0:
            break
        time.sleep(0.3)  # the server publishes its change counts about once a second
    assert 0 < believed() <= ChatSession.objects.count()
