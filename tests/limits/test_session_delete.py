"""Deleting a session never loads its entries: they go in one DELETE, audit rows with them."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from piweb.audit.models import OmittedAttempt
from sessions_app import services
from sessions_app.models import ChatSession, Entry, Segment
from tests.factories import session_file, small_tree


def test_deleting_a_session_removes_entries_in_sql_without_reading_them(user: Any) -> None:
    owner = user()
    session = services.import_jsonl(owner=owner, data=session_file(small_tree()), filename="s.jsonl").session
    edit = Entry.objects.filter(session=session).order_by("seq").first()
    assert edit is not None
    OmittedAttempt.objects.create(edit=edit, session=session, owner=owner, edit_entry_id=edit.entry_id or "")
    other = services.import_jsonl(owner=user(), data=session_file(small_tree()), filename="s.jsonl").session

    with CaptureQueriesContext(connection) as queries:
        services.delete_session(session=session)

    entry_table = Entry._meta.db_table
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'"{entry_table}"' in q["sql"]]
    assert reads == []
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert not Segment.objects.filter(session_id=session.pk).exists()
    assert not OmittedAttempt.objects.filter(session_id=session.pk).exists()
    assert Entry.objects.filter(session=other).count() == 6
