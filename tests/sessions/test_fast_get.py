"""The session read the access check makes: compiled once, the same instance the ORM builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.fast_get import ByPk
from sessions_app.models import ChatSession
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


def test_a_session_read_by_key_equals_the_orm_read_in_one_query(user: Callable[..., Any]) -> None:
    owner = user()
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    fork = services.fork_session(session=session, entry_id="u2", actor=owner).session
    ChatSession.objects.filter(pk=fork.pk).update(
        compaction_settings={"enabled": False, "keepRecentTokens": 5}, sync_cursor={"lines": 3}
    )
    by_pk = ByPk(ChatSession, lambda: ChatSession.objects.all())
    for pk in (session.pk, fork.pk):
        expected = ChatSession.objects.get(pk=pk)
        with CaptureQueriesContext(connection) as queries:
            found = by_pk.get(pk)
        assert len(queries.captured_queries) == 1
        assert found is not None and type(found) is ChatSession
        for field in ChatSession._meta.concrete_fields:
            assert getattr(found, field.attname) == getattr(expected, field.attname), field.name
        assert (found._state.adding, found._state.db) == (False, "default")
    found = by_pk.get(fork.pk)
    assert found is not None and found.compaction_settings == {"enabled": False, "keepRecentTokens": 5}
    assert found.created_at.tzinfo is not None
    # A normal instance: it saves, and its relations load.
    found.name = "renamed"
    found.save(update_fields=["name"])
    assert ChatSession.objects.get(pk=fork.pk).name == "renamed"
    assert found.owner == owner and found.forked_from == session


def test_a_key_with_no_row_or_out_of_range_is_none_without_an_error(user: Callable[..., Any]) -> None:
    session = services.create_session(actor=user(), cwd="/w")
    by_pk = ByPk(ChatSession, lambda: ChatSession.objects.all())
    assert by_pk.get(session.pk + 1) is None
    with CaptureQueriesContext(connection) as queries:
        assert by_pk.get(2**63) is None
        assert by_pk.get(-(2**63) - 1) is None
    assert queries.captured_queries == []  # the ORM would not ask either
    assert by_pk.get(str(session.pk)) is not None


def test_the_querysets_own_filters_hold(user: Callable[..., Any]) -> None:
    owner = user()
    kept, deleted = (services.create_session(actor=owner, cwd=f"/{n}") for n in ("kept", "deleted"))
    services.delete_session(session=deleted, actor=owner)
    live = ByPk(ChatSession, lambda: ChatSession.objects.all())
    every = ByPk(ChatSession, lambda: ChatSession.with_deleted.all())
    cwd = ByPk(ChatSession, lambda: ChatSession.with_deleted.filter(cwd="/kept"))
    assert live.get(deleted.pk) is None and live.get(kept.pk) is not None
    assert every.get(deleted.pk) is not None
    assert cwd.get(kept.pk) is not None and cwd.get(deleted.pk) is None
    assert ChatSession.objects.grant_for(owner, deleted.pk) is None


def test_rows_by_two_keys_equal_the_orm_rows_duplicates_included(user: Callable[..., Any]) -> None:
    from sessions_app.fast_get import ByFields
    from sessions_app.models import Entry

    owner = user()
    # A file may repeat an id (Pi's index keeps the newest): both rows come back.
    again = {"type": "custom", "customType": "x", "id": "a1", "parentId": "a3", "data": 1}
    again["timestamp"] = "2026-01-02T03:04:09.000Z"
    session = services.import_jsonl(actor=owner, data=session_file([*small_tree(), again])).session
    other = services.import_jsonl(
        actor=owner, data=session_file(small_tree(), {**HEADER, "id": "other"})
    ).session
    by_id = ByFields(Entry, lambda: Entry.objects.all(), "session_id", "entry_id")
    for pk, entry_id in ((session.pk, "a1"), (other.pk, "a1"), (session.pk, "u3")):
        expected = sorted(Entry.objects.filter(session_id=pk, entry_id=entry_id), key=lambda r: r.seq)
        with CaptureQueriesContext(connection) as queries:
            found = sorted(by_id.rows(pk, entry_id), key=lambda r: r.seq)
        assert len(queries.captured_queries) == 1
        assert [r.pk for r in found] == [r.pk for r in expected] and found
        for got, want in zip(found, expected, strict=True):
            for field in Entry._meta.concrete_fields:
                assert getattr(got, field.attname) == getattr(want, field.attname), field.name
    assert len(by_id.rows(session.pk, "a1")) == 2
    assert by_id.rows(session.pk, "no such id") == []
    assert by_id.rows(session.pk, "a1'; drop table x; --") == []  # a parameter, never SQL
