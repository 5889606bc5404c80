"""``manage.py reconcile`` repairs what the previous release left out while an upgrade ran.

The previous release stores entries as this one does (same placement, same counters) but none of the
bookkeeping it did not know about: stored bytes, context sums, cost and usage rows. Its appends are
written here as this release's appends with that bookkeeping taken back out, which is the state it leaves.
After the command, the session's bookkeeping equals that of the same file imported fresh.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from audit.models import SessionUsage
from costs.models import MessageCost, UsageDay
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ChatSession, EntrySums
from sessions_app.services.reconcile import reconcile
from tests.factories import HEADER, conversation, session_file
from tests.upgrade.bookkeeping import bookkeeping

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the usage rollup is PostgreSQL's")


def pi_file(entries: list[dict[str, Any]], pi_id: str) -> bytes:
    return session_file(entries, {**HEADER, "id": pi_id})


def append_as_previous_release(session: ChatSession, entries: list[dict[str, Any]], actor: Any) -> None:
    """Append as the previous release did during the upgrade: entries and counters, no bookkeeping."""
    days = list(UsageDay.objects.filter(session=session).values())
    usage = list(SessionUsage.objects.filter(session=session).values())
    stored_bytes = ChatSession.objects.get(pk=session.pk).stored_bytes
    first = ChatSession.objects.get(pk=session.pk).next_seq
    services.append_entries(session=session, entries=entries, actor=actor)
    EntrySums.objects.filter(session_id=session.pk, seq__gte=first).delete()
    MessageCost.objects.filter(session_id=session.pk, seq__gte=first).delete()
    UsageDay.objects.filter(session=session).delete()
    UsageDay.objects.bulk_create(UsageDay(**row) for row in days)
    SessionUsage.objects.filter(session=session).delete()
    SessionUsage.objects.bulk_create(SessionUsage(**row) for row in usage)
    ChatSession.objects.filter(pk=session.pk).update(stored_bytes=stored_bytes)


def test_reconcile_brings_an_upgraded_session_to_a_fresh_imports_numbers(user: Any) -> None:
    owner = user("olga")
    LLMProvider.objects.create(
        name="priced",
        base_url="http://127.0.0.1:1/v1",
        provider="p",
        model_id="m",
        cost_input=3,
        cost_output=15,
    )
    entries = conversation(8)  # a system message, then 8 questions and answers: 17 entries
    fresh = services.import_jsonl(actor=owner, data=pi_file(entries, "fresh"), filename="fresh.jsonl").session

    upgraded = services.import_jsonl(
        actor=owner, data=pi_file(entries[:7], "up"), filename="up.jsonl"
    ).session
    append_as_previous_release(upgraded, entries[7:11], owner)  # during the upgrade
    services.append_entries(session=upgraded, entries=entries[11:], actor=owner)  # the new release, after
    before = bookkeeping(upgraded.pk)
    want = bookkeeping(fresh.pk)
    # What the operator would notice: the quota is short, the answers above the old release's have no
    # context sums (the panel projects them in full), their path costs leave out two answers.
    assert before["stored_bytes"] < want["stored_bytes"]
    assert len(before["sums"]) == 7 < len(want["sums"]) == 17
    assert len(before["costs"]) == 6 < len(want["costs"]) == 8
    assert before["costs"][-1][6] < want["costs"][-1][6]

    out = io.StringIO()
    call_command("reconcile", stdout=out, stderr=io.StringIO())

    assert bookkeeping(upgraded.pk) == want
    assert bookkeeping(fresh.pk) == want  # a session found right is left as it was
    repaired = "context sums 1, costs 1, stored bytes 1, usage 1"
    assert out.getvalue().strip() == f"2 session(s) checked up to id {upgraded.pk}; repaired: {repaired}"
    # Run again, it finds nothing to do.
    again = reconcile()
    assert (again.checked, dict(again.repaired)) == (2, {})


class Stopped(Exception):
    pass


def test_a_stopped_run_resumes_after_the_last_session_it_reported(user: Any) -> None:
    owner = user("olga")
    entries = conversation(2)
    want = bookkeeping(
        services.import_jsonl(actor=owner, data=pi_file(entries, "f"), filename="f").session.pk
    )
    sessions = []
    for name in ("a", "b", "c"):
        session = services.import_jsonl(actor=owner, data=pi_file(entries[:3], name), filename=name).session
        append_as_previous_release(session, entries[3:], owner)
        sessions.append(session)
    reported: list[int] = []

    def stop(done: Any) -> None:
        reported.append(done.last_pk)
        raise Stopped  # the operator's Ctrl-C after the first batch

    with pytest.raises(Stopped):
        reconcile(after=sessions[0].pk - 1, batch=2, progress=stop)
    assert reported == [sessions[1].pk]
    assert bookkeeping(sessions[1].pk)["sums"] == want["sums"]
    assert bookkeeping(sessions[2].pk)["sums"] != want["sums"]

    rest = reconcile(after=reported[-1])

    assert (rest.checked, rest.repaired["context sums"]) == (1, 1)
    assert [bookkeeping(s.pk)["sums"] for s in sessions] == [want["sums"]] * 3


def test_sessions_this_release_wrote_are_left_as_they_are(user: Any) -> None:
    """Forks and clones count their copies apart (cost day rows, the usage rollup): still found right."""
    owner = user("olga")
    entries = conversation(3)
    source = services.import_jsonl(actor=owner, data=pi_file(entries, "source"), filename="s").session
    fork = services.fork_session(session=source, entry_id="a2", actor=owner).session
    services.append_entries(session=fork, entries=entries[5:], actor=owner)
    clone = services.clone_session(session=source, actor=owner)
    before = {pk: bookkeeping(pk) for pk in (source.pk, fork.pk, clone.pk)}

    done = reconcile()

    assert (done.checked, dict(done.repaired)) == (3, {})
    assert {pk: bookkeeping(pk) for pk in before} == before
