"""Deleting a session never loads its entries, and what the owner waits for does not grow with the session.

The delete hides the session in one short transaction that touches no entry; the purge that follows
deletes the entries by ranges of their sequence numbers, a bounded batch per statement, audit rows with
them, still without reading one.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import OmittedAttempt
from piweb.celery import app as celery_app
from sessions_app import services
from sessions_app.models import ChatSession, Entry, EntrySearch, EntrySums, Segment
from tests.factories import conversation, session_file, small_tree, store

ENTRY_TABLE = f'"{Entry._meta.db_table}"'
SEARCH_TABLE = f'"{EntrySearch._meta.db_table}"'
SUMS_TABLE = f'"{EntrySums._meta.db_table}"'


def test_deleting_a_session_removes_entries_in_sql_without_reading_them(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    owner = user()
    session = store(owner, conversation(40))  # 81 entries
    edit = Entry.objects.filter(session=session).order_by("seq").first()
    assert edit is not None
    OmittedAttempt.objects.create(edit=edit, session=session, owner=owner, edit_entry_id=edit.entry_id or "")
    other = services.import_jsonl(actor=user(), data=session_file(small_tree()), filename="s.jsonl").session
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True  # the purge runs here, once the delete has committed
    try:
        with CaptureQueriesContext(connection) as queries:
            with django_capture_on_commit_callbacks(execute=False) as after_commit:
                services.delete_session(session=session, actor=owner)
            request_queries = len(queries)
            for callback in after_commit:
                callback()
    finally:
        celery_app.conf.task_always_eager = eager

    statements = [q["sql"] for q in queries.captured_queries]
    reads = [sql for sql in statements if sql.startswith("SELECT") and ENTRY_TABLE in sql]
    assert reads == []
    # The owner waits for a few statements on the session row, none on its entries.
    assert not any(ENTRY_TABLE in sql for sql in statements[:request_queries])
    # The purge deletes the entries and their search rows by seq ranges, each a bounded batch.
    ranged = [
        sql
        for sql in statements
        if sql.startswith("DELETE") and re.search(r'"seq" >= \d+ AND "seq" < \d+', sql)
    ]
    per_entry = (ENTRY_TABLE, SEARCH_TABLE, SUMS_TABLE)  # the entries, their search rows, their running sums
    tables = {table for sql in ranged for table in per_entry if table in sql}
    assert tables == set(per_entry)
    assert all(any(table in sql for table in per_entry) for sql in ranged)
    assert not ChatSession.with_deleted.filter(pk=session.pk).exists()
    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert not EntrySearch.objects.filter(session_id=session.pk).exists()
    assert not Segment.objects.filter(session_id=session.pk).exists()
    assert not OmittedAttempt.objects.filter(session_id=session.pk).exists()
    assert Entry.objects.filter(session=other).count() == 6
