"""The usage rollup is kept at append time and the page reads it in a fixed number of queries."""

from __future__ import annotations

import dataclasses
import importlib
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from audit.models import SessionUsage
from audit.usage import Rollup, Totals, compute_rollup
from audit.usage_rollup import rollup_sql
from sessions_app import services as session_services
from sessions_app.models import ChatSession, Entry, SessionShare
from teams.models import Team, TeamMembership
from tests.factories import conversation, seeded_session, store


def _answer(model: str, tokens: int, cost: float) -> dict:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "provider": "p",
        "model": model,
        "stopReason": "stop",
        "usage": {"input": tokens, "output": 2, "cacheRead": 3, "cacheWrite": 4, "cost": {"total": cost}},
        "timestamp": 1,
    }
    return {"type": "message", "message": message}


def _export(session) -> bytes:
    raws = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    return "\n".join([session.header_raw, *raws]).encode()


def test_an_append_updates_the_rollup_in_its_own_transaction(user) -> None:
    session = seeded_session(user("ann"), turns=1)
    with pytest.raises(RuntimeError), transaction.atomic():
        session_services.append_entries(session=session, actor=session.owner, entries=[_answer("m", 10, 0.5)])
        kept = SessionUsage.objects.get(session=session, model="p/m")
        assert (kept.input, kept.output, kept.cost, kept.messages) == (10, 2, 0.5, 1)
        raise RuntimeError("the request failed after the append")
    assert not SessionUsage.objects.filter(session=session, model="p/m").exists()
    session_services.append_entries(
        session=session, actor=session.owner, entries=[_answer("m", 10, 0.5), _answer("m", 5, 0.25)]
    )
    kept = SessionUsage.objects.get(session=session, model="p/m")
    assert (kept.input, kept.cost, kept.messages) == (15, 0.75, 2)


def _rounded(rollup: Rollup) -> Rollup:
    def fix(totals: Totals) -> Totals:
        return dataclasses.replace(totals, cost=round(totals.cost, 9))

    return Rollup(
        by_user=[(k, fix(t)) for k, t in rollup.by_user],
        by_team=[(k, fix(t)) for k, t in rollup.by_team],
        by_model=[(k, fix(t)) for k, t in rollup.by_model],
        overall=fix(rollup.overall),
    )


def test_the_page_numbers_equal_a_full_recount_in_fixed_queries(user) -> None:
    owner, other = user("bea"), user("cal")
    first = seeded_session(owner, turns=2)
    session_services.append_entries(
        session=first, actor=first.owner, entries=[_answer("m", 7, 0.1), _answer("n", 9, 0.2)]
    )
    compute_rollup()  # whatever a first call caches (earlier tests decide that) is not counted below
    with CaptureQueriesContext(connection) as one_session:
        compute_rollup()
    # A bulk import (COPY), a re-import that appends, a fork, and a deleted session.
    imported = session_services.import_jsonl(actor=other, data=_export(first)).session
    session_services.append_entries(session=first, actor=first.owner, entries=[_answer("m", 1000, 3.0)])
    session_services.import_jsonl(actor=other, data=_export(first))
    leaf = Entry.objects.filter(session=first, role="assistant").order_by("seq").last()
    session_services.fork_session(session=first, entry_id=leaf.entry_id, actor=owner)
    gone = seeded_session(user("dot"), turns=1)
    session_services.append_entries(session=gone, actor=gone.owner, entries=[_answer("gone", 50, 9.0)])
    session_services.delete_session(session=gone, actor=gone.owner)

    with CaptureQueriesContext(connection) as many_sessions:
        kept = compute_rollup()
    recount = compute_rollup(recount=True)

    assert _rounded(kept) == _rounded(recount)  # costs summed in another order differ in the last bit
    by_user = dict(kept.by_user)
    assert by_user["cal"].input == 7 + 9 + 1000 and by_user["cal"].messages >= 3
    assert "p/gone" not in dict(kept.by_model)
    assert len(many_sessions.captured_queries) == len(one_session.captured_queries)
    assert not any('"raw"' in q["sql"] for q in many_sessions.captured_queries)
    assert imported.pk


def test_a_teams_row_counts_its_shared_sessions_only(user) -> None:
    # Issue 24: a team with one small shared session showed its members' whole history.
    member = user("max")
    shared = seeded_session(member, turns=1)
    session_services.append_entries(session=shared, actor=member, entries=[_answer("m", 10, 0.5)])
    private = store(member, conversation(1), pi_id="private")
    session_services.append_entries(session=private, actor=member, entries=[_answer("m", 73_000_000, 90.0)])
    team = Team.objects.create(name="small")
    TeamMembership.objects.create(team=team, user=member, role="owner")
    SessionShare.objects.create(session=shared, team=team)
    Team.objects.create(name="empty")

    for rollup in (compute_rollup(), compute_rollup(recount=True)):
        teams = dict(rollup.by_team)
        assert teams["small"].input == 10 and round(teams["small"].cost, 9) == 0.5
        assert dict(rollup.by_user)["max"].input > 73_000_000  # the member's own row counts everything
        assert "empty" not in teams


def test_forks_and_clones_count_their_copies_once(user) -> None:
    ann, bob = user("ann"), user("bob")
    source = seeded_session(ann, turns=1)
    session_services.append_entries(session=source, actor=ann, entries=[_answer("m", 10, 0.5)])
    team = Team.objects.create(name="pair")
    TeamMembership.objects.create(team=team, user=ann, role="owner")
    TeamMembership.objects.create(team=team, user=bob, role="editor")
    SessionShare.objects.create(session=source, team=team)
    leaf = Entry.objects.filter(session=source, role="assistant").order_by("seq").last()
    fork = session_services.fork_session(session=source, entry_id=leaf.entry_id, actor=bob).session
    clone = session_services.clone_session(session=source, actor=ann)
    session_services.append_entries(session=fork, actor=bob, entries=[_answer("m", 3, 0.25)])
    SessionShare.objects.create(session=fork, team=team)
    SessionShare.objects.create(session=clone, team=team)

    for rollup in (compute_rollup(), compute_rollup(recount=True)):
        users, teams = dict(rollup.by_user), dict(rollup.by_team)
        assert (users["ann"].input, round(users["ann"].cost, 9)) == (10, 0.5)  # the clone adds nothing
        assert (users["bob"].input, round(users["bob"].cost, 9), users["bob"].messages) == (3, 0.25, 1)
        assert (teams["pair"].input, round(teams["pair"].cost, 9)) == (13, 0.75)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the rollup is kept on PostgreSQL only")
def test_the_migration_takes_the_copies_of_earlier_forks_out_of_the_rollup(user) -> None:
    owner = user("ann")
    source = seeded_session(owner, turns=1)
    session_services.append_entries(session=source, actor=owner, entries=[_answer("m", 10, 0.5)])
    leaf = Entry.objects.filter(session=source, role="assistant").order_by("seq").last()
    fork = session_services.fork_session(session=source, entry_id=leaf.entry_id, actor=owner).session
    # As a fork made before copies were told apart: its whole copy rolled up, no copies marked.
    ChatSession.objects.filter(pk=fork.pk).update(copied_entries=0)
    with connection.cursor() as cursor:
        cursor.execute(rollup_sql("session_id = %s"), [fork.pk])
    assert dict(compute_rollup().by_user)["ann"].input == 20

    editor = SimpleNamespace(connection=connection)
    importlib.import_module("sessions_app.migrations.0027_session_copied_entries").count_copies(None, editor)
    importlib.import_module("audit.migrations.0005_usage_without_copies").roll_up_forks_again(None, editor)

    assert dict(compute_rollup().by_user)["ann"].input == 10
    assert _rounded(compute_rollup()) == _rounded(compute_rollup(recount=True))
