"""Appends of a chain: one locked round trip, the same rows as any other write path, safe under load.

Most tests here use real transactions (``transaction=True``): inside a test's wrapping transaction an
append joins it and never takes the path that commits with its writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DataError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from psycopg.pq import TransactionStatus

from actionlog.models import ActionLog
from audit.models import SessionUsage
from core.actors import SystemActor
from pitree.jsjson import js_stringify
from pitree.session import load_session
from sessions_app import queries, services, signals
from sessions_app.models import ChatSession, Entry, EntrySums
from tests.factories import (
    assert_one_gapless_chain,
    assistant_message,
    run_writers,
    session_file,
    user_message,
)

real_transactions = pytest.mark.django_db(transaction=True)


def _say(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def _answer(text: str, tokens: int = 10) -> dict[str, Any]:
    entry = assistant_message("x", None, text)
    entry["message"]["usage"]["input"] = tokens
    return {"type": "message", "message": entry["message"]}


def _facts(session: ChatSession) -> dict[str, tuple[Any, ...]]:
    rows = Entry.objects.filter(session=session).order_by("seq")
    return {
        r.entry_id or "": (r.parent_id, r.depth, *(_id_at(session, s) for s in _anchors(r))) for r in rows
    }


def _anchors(row: Entry) -> tuple[int | None, ...]:
    return (row.parent_seq, row.compaction_seq, row.model_seq, row.thinking_seq)


def _id_at(session: ChatSession, seq: int | None) -> str | None:
    if seq is None:
        return None
    return Entry.objects.get(session=session, seq=seq).entry_id


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """The append's statements through its COMMIT. What runs after the commit (receivers of
    ``entries_committed``: reviews look for an open review the entry makes outdated) may only read."""
    words = [q["sql"].split()[0].upper() for q in captured.captured_queries]
    if "COMMIT" not in words:
        return words
    end = words.index("COMMIT") + 1
    assert all(word == "SELECT" for word in words[end:]), words[end:]
    return words[:end]


@real_transactions
def test_an_append_under_the_leaf_is_one_round_trip_that_commits_with_its_writes(
    user: Callable[..., Any],
) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    with CaptureQueriesContext(connection) as captured:
        (row,) = services.append_entries(session=session, actor=session.owner, entries=[_say("next")])
    # BEGIN, its author (stored once), the row lock, the append, its running sums, its log row and COMMIT,
    # all sent before the first answer is read.
    assert _statements(captured) == ["BEGIN", "INSERT", "SELECT", "WITH", "WITH", "INSERT", "COMMIT"]
    assert EntrySums.objects.filter(session=session).count() == 2
    logged = ActionLog.objects.get(session=session, action="append")
    assert (logged.actor, logged.actor_name, logged.detail) == (
        session.owner,
        session.owner.username,
        {"entries": 1},
    )
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE
    other = connections.create_connection("default")
    try:
        # Committed: another connection sees the row and the moved leaf.
        seen = other.cursor()
        seen.execute(
            "SELECT leaf_entry_id, next_seq FROM sessions_app_chatsession WHERE id = %s", [session.pk]
        )
        assert seen.fetchone() == (row.entry_id, 2)
    finally:
        other.close()
    assert (row.parent_id, row.depth, row.seq) == ("u1", 1, 1)
    assert (session.leaf_entry_id, session.next_seq, session.entry_count) == (row.entry_id, 2, 2)


@real_transactions
def test_an_answer_is_audited_in_the_transaction_that_stores_it(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    with CaptureQueriesContext(connection) as captured:
        services.append_entries(session=session, actor=session.owner, entries=[_answer("sure", tokens=7)])
    statements = _statements(captured)
    # The usage rollup's upsert runs after the append, before the commit.
    assert statements[:4] == ["BEGIN", "INSERT", "SELECT", "WITH"] and statements[-1] == "COMMIT"
    assert "INSERT" in statements[3:-1]
    usage = SessionUsage.objects.get(session=session, model="p/m")
    assert (usage.input, usage.messages) == (7, 1)


@real_transactions
def test_chains_place_entries_as_an_import_of_the_export_does(user: Callable[..., Any]) -> None:
    owner = user()
    session = services.create_session(actor=owner, cwd="/w")

    def add(*entries: dict[str, Any], **kw: Any) -> list[Entry]:
        return services.append_entries(session=session, actor=session.owner, entries=list(entries), **kw)

    add(_say("first"))  # a root in an empty session
    trunk = add(_answer("a"), {"type": "model_change", "provider": "p", "modelId": "n"}, _say("b"))
    add({"type": "thinking_level_change", "thinkingLevel": "high"}, _say("c"))
    # Under a named parent in the middle of a segment: a branch.
    branch = add({**_say("x"), "parentId": trunk[0].entry_id}, _answer("y"))
    # Pi lines with their own ids, each naming the one before.
    add(
        {**_say("p1"), "id": "p1", "parentId": trunk[-1].entry_id},
        {**_say("p2"), "id": "p2", "parentId": "p1"},
        {
            "type": "compaction",
            "id": "k1",
            "parentId": "p2",
            "summary": "s",
            "firstKeptEntryId": "p2",
            "tokensBefore": 9,
        },
        _say("after"),
    )
    add({**_say("new root"), "parentId": None})
    add({"type": "session_info", "name": "  Named  "}, expected_leaf=session.leaf_entry_id)
    add({**_say("on the branch"), "parentId": branch[-1].entry_id})

    stored = ChatSession.objects.get(pk=session.pk)
    exported = b"".join(services.export_jsonl(stored))
    tree = load_session(exported.decode()).tree
    header, rest = exported.split(b"\n", 1)
    renamed = json.dumps({**json.loads(header), "id": "the-copy"}).encode()
    copy = services.import_jsonl(actor=owner, data=renamed + b"\n" + rest).session
    assert _facts(stored) == _facts(copy)
    for row in Entry.objects.filter(session=stored):
        assert [_id_at(stored, s) for s in queries.path_seqs(stored, row)] == [
            e.id for e in tree.path(row.entry_id)
        ]
    assert (stored.name, stored.entry_count, stored.next_seq, stored.message_count) == ("Named", 15, 15, 11)
    assert (stored.leaf_entry_id, stored.leaf_seq) == (session.leaf_entry_id, 14)
    assert (session.name, session.entry_count, session.next_segment) == (
        stored.name,
        stored.entry_count,
        stored.next_segment,
    )


def test_the_leaf_is_written_into_the_first_line_as_json_stringify_writes_it(
    user: Callable[..., Any],
) -> None:
    odd = 'q"\\\n\x01é😀\u2028piweb-parent-0'
    session = services.import_jsonl(actor=user(), data=session_file([user_message(odd, None, "hi")])).session
    # The marker that finds the parentId's place also occurs in the entry, under an integer-like key
    # (JSON.stringify writes those first) and in its text.
    entry = {"type": "custom", "0": {"parentId": None, "at": "piweb-parent-0"}, "data": "piweb-parent-0"}
    (row,) = services.append_entries(session=session, actor=session.owner, entries=[entry])
    stored = Entry.objects.get(pk=row.pk)
    expected = {"type": "custom", "id": row.entry_id, "parentId": odd, "timestamp": row.timestamp, **entry}
    assert stored.raw == row.raw == js_stringify(expected)
    assert json.loads(stored.raw)["parentId"] == odd and stored.parent_id == odd


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "custom", "id": "a\x00b"},
        {"type": "session_info", "name": "x\x00"},
        {"type": "custom", "timestamp": "\x00"},
        {"type": "custom", "parentId": "\ud800"},
    ],
)
def test_unstorable_ids_names_and_timestamps_are_refused_with_the_general_message(
    user: Callable[..., Any], entry: dict[str, Any]
) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    with pytest.raises(services.InvalidSessionFile, match="cannot be stored"):
        services.append_entries(session=session, actor=session.owner, entries=[entry])
    assert Entry.objects.filter(session=session).count() == 1


def test_refusals_name_the_first_problem_and_store_nothing(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    with pytest.raises(services.InvalidEntries, match="entry 0: id 'u1' already exists"):
        services.append_entries(
            session=session, actor=session.owner, entries=[{**_say("x"), "id": "u1", "parentId": "nope"}]
        )
    with pytest.raises(services.InvalidEntries, match="parent 'nope' is not an entry"):
        services.append_entries(
            session=session, actor=session.owner, entries=[{**_say("x"), "parentId": "nope"}, _say("y")]
        )
    with pytest.raises(services.InvalidEntries, match="entry 1: id 'u1' already exists"):
        services.append_entries(
            session=session, actor=session.owner, entries=[_say("x"), {**_say("y"), "id": "u1"}]
        )
    with pytest.raises(services.AppendConflict):
        services.append_entries(
            session=session, actor=session.owner, entries=[{**_say("x"), "id": "u1"}], expected_leaf="zz"
        )
    with pytest.raises(ChatSession.DoesNotExist):
        services.append_entries(
            session=ChatSession(pk=session.pk + 1000), actor=SystemActor("tests"), entries=[_say("x")]
        )
    services.delete_session(session=session, actor=session.owner)
    with pytest.raises(ChatSession.DoesNotExist):  # hidden at once, before the purge
        services.append_entries(session=session, actor=session.owner, entries=[_say("x")])
    session = ChatSession.with_deleted.get(pk=session.pk)
    session.refresh_from_db()
    assert (Entry.objects.filter(session=session).count(), session.next_seq, session.leaf_entry_id) == (
        1,
        1,
        "u1",
    )


@real_transactions
def test_a_failed_append_rolls_back_and_leaves_the_connection_usable(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    # The next seq past the column's range: the database refuses the insert after taking the lock.
    ChatSession.objects.filter(pk=session.pk).update(next_seq=2**31 - 1)
    with pytest.raises(DataError):
        services.append_entries(session=session, actor=session.owner, entries=[_say("a"), _say("b")])
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE
    stored = ChatSession.objects.get(pk=session.pk)
    assert (stored.leaf_entry_id, stored.entry_count) == ("u1", 1)
    ChatSession.objects.filter(pk=session.pk).update(next_seq=1)
    (row,) = services.append_entries(session=session, actor=session.owner, entries=[_say("a")])
    assert (row.seq, row.parent_id) == (1, "u1")


@real_transactions
def test_receivers_hear_the_appends_they_act_on_inside_the_transaction(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    heard: list[tuple[str, list[str], bool]] = []

    def every(sender: Any, *, rows: list[Entry], **_: Any) -> None:
        heard.append(("every", [r.type for r in rows], connection.in_atomic_block))

    def labels(sender: Any, *, rows: list[Entry], **_: Any) -> None:
        heard.append(("labels", [r.type for r in rows], connection.in_atomic_block))

    signals.entries_stored.connect(every, dispatch_uid="test-every")
    try:
        services.append_entries(session=session, actor=session.owner, entries=[_say("a")])
        assert heard == [("every", ["message"], True)]
    finally:
        signals.entries_stored.disconnect(dispatch_uid="test-every")
    heard.clear()
    signals.connect_entries_stored(labels, dispatch_uid="test-labels", acts_on=[("label", "")])
    try:
        services.append_entries(session=session, actor=session.owner, entries=[_say("b")])
        assert heard == []
        services.append_entries(
            session=session, actor=session.owner, entries=[{"type": "label", "targetId": "u1", "label": "x"}]
        )
        assert heard == [("labels", ["label"], True)]
    finally:
        signals.entries_stored.disconnect(dispatch_uid="test-labels")


@real_transactions
def test_concurrent_chains_with_and_without_audit_stay_one_gapless_chain(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(actor=user(), data=session_file([user_message("u1", None, "hi")])).session
    rounds = 8

    def writer(n: int) -> None:
        for i in range(rounds):
            if n % 2:
                services.append_entries(
                    session=session, actor=session.owner, entries=[_answer(f"{n}-{i}", tokens=n)]
                )
            elif n == 2:
                with transaction.atomic():  # a caller's transaction joined by the append
                    services.append_entries(
                        session=session, actor=session.owner, entries=[_say(f"{n}-{i}"), _say("more")]
                    )
            else:
                services.append_entries(session=session, actor=session.owner, entries=[_say(f"{n}-{i}")])

    run_writers(8, writer)
    total = 1 + 8 * rounds + rounds  # the writer in a transaction appends two at a time
    rows = assert_one_gapless_chain(session, total)
    usage = SessionUsage.objects.get(session=session, model="p/m")
    assert (usage.messages, usage.input) == (4 * rounds, (1 + 3 + 5 + 7) * rounds)
    stored = ChatSession.objects.get(pk=session.pk)
    assert (stored.next_seq, stored.entry_count, stored.leaf_entry_id) == (total, total, rows[-1][1])
