"""The admin audit pages, fed by real runs against the scripted provider server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import transaction
from django.test import Client

from actionlog.models import ActionLog
from agent import services as agent_services
from audit.models import OmittedAttempt
from audit.usage import compute_rollup
from compaction_app.models import CompactionRun
from providers.llm import testserver as script
from sessions_app import services as session_services
from sessions_app.models import SessionShare
from teams.models import Team, TeamMembership
from tests.factories import entries, seeded_session

pytestmark = pytest.mark.django_db(transaction=True)

OMITTED = "/admin/audit/omittedattempt/"
COMPACTIONS = "/admin/compaction_app/compactionrun/"
ACTIONS = "/admin/actionlog/actionlog/"
USAGE = "/admin/audit/usagerollup/"


def staff_client(user: Any) -> Client:
    client = Client()
    client.force_login(user("auditor", is_staff=True, is_superuser=True))
    return client


def run_prompt(session: Any, owner: Any, provider: Any, prompt: str = "Please continue.") -> Any:
    run = agent_services.start_run(session=session, user=owner, prompt=prompt, provider=provider)
    run.refresh_from_db()
    return run


def overflow_run(user: Any, make_provider: Any, server: Any, settings: Any) -> tuple[Any, Any]:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100}
    owner = user("ada")
    session = seeded_session(owner)
    server.enqueue(script.overflow(), script.reply("Recovered: here is the plan.", usage={"input": 900}))
    run = run_prompt(session, owner, make_provider())
    assert run.status == "succeeded", run.error
    return session, run


def rows_of(html: str) -> list[str]:
    """Return the rows of the changelist's result table, header first."""
    table = re.search(r'<table id="result_list">.*?</table>', html, flags=re.S)
    return re.findall(r"<tr[^>]*>.*?</tr>", table.group(0) if table else "", flags=re.S)


def test_overflow_recovery_is_listed_with_its_failure_and_outcome(
    user, make_provider, server, settings
) -> None:
    session, run = overflow_run(user, make_provider, server, settings)
    failed = next(e for e in entries(session) if e.get("message", {}).get("stopReason") == "error")
    edit = next(e for e in entries(session) if e["type"] == "context_edit")
    client = staff_client(user)

    page = client.get(OMITTED)

    assert page.status_code == 200
    html = page.content.decode()
    (row,) = [r for r in rows_of(html) if failed["id"] in r]
    assert "prompt is too long" in row
    assert "overflow" in row and "anthropic/claude-test" in row and "ada" in row
    assert f"/sessions/{session.pk}/#entry={failed['id']}" in row
    assert "icon-yes" in row  # the retry after the compaction came back whole
    compaction = CompactionRun.objects.get(session=session)
    assert f"/admin/compaction_app/compactionrun/{compaction.pk}/change/" in row

    attempt = OmittedAttempt.objects.get(edit_entry_id=edit["id"])
    assert (attempt.why, attempt.retry_succeeded, attempt.run_id) == ("overflow", True, run.pk)
    assert attempt.stop_reason == "error" and attempt.target_entry_id == failed["id"]
    assert attempt.requested_by.username == "ada" and attempt.omitted_at is not None

    detail = client.get(f"{OMITTED}{attempt.pk}/change/").content.decode()
    assert "prompt is too long" in detail and 'name="_save"' not in detail


def test_the_compaction_from_the_recovery_is_in_the_history_side_by_side(
    user, make_provider, server, settings
) -> None:
    session, _ = overflow_run(user, make_provider, server, settings)
    compaction = CompactionRun.objects.get(session=session)
    client = staff_client(user)

    listing = client.get(COMPACTIONS, {"reason__exact": "overflow"}).content.decode()
    detail = client.get(f"{COMPACTIONS}{compaction.pk}/change/").content.decode()

    assert str(compaction.operation_id) in listing and "succeeded" in listing
    assert compaction.status == "succeeded" and compaction.tokens_before and compaction.first_kept_entry_id
    assert "Summary" in detail and "Replaced entries" in detail
    assert compaction.summary.splitlines()[0] in detail
    assert "Question 0" in detail  # the replaced turns are shown next to the summary
    assert compaction.first_kept_entry_id in detail


def test_failed_and_cancelled_summaries_stay_in_the_history(user) -> None:
    owner = user("bob")
    session = seeded_session(owner)
    for status, kind, error in (
        ("failed", "compaction", "Summarization failed: 529 overloaded"),
        ("cancelled", "branch_summary", ""),
    ):
        CompactionRun.objects.create(
            idempotency_key=f"{status}-key",
            kind=kind,
            session=session,
            reason="manual" if kind == "compaction" else "navigate",
            status=status,
            error=error,
        )
    client = staff_client(user)

    failed = rows_of(client.get(COMPACTIONS, {"status__exact": "failed"}).content.decode())
    cancelled = rows_of(
        client.get(
            COMPACTIONS, {"status__exact": "cancelled", "kind__exact": "branch_summary"}
        ).content.decode()
    )

    runs = {run.status: run for run in CompactionRun.objects.all()}
    assert len(failed) == 2 and str(runs["failed"].operation_id) in failed[1]
    assert len(cancelled) == 2 and str(runs["cancelled"].operation_id) in cancelled[1]
    assert "529 overloaded" in client.get(f"{COMPACTIONS}{runs['failed'].pk}/change/").content.decode()


def test_transient_retries_are_listed_with_each_attempt_outcome(user, make_provider, server) -> None:
    owner = user("cy")
    session = session_services.create_session(actor=owner, cwd="/repo")
    server.enqueue(script.rate_limited(), script.dropped(after=3), script.reply("Third time lucky."))
    run = run_prompt(session, owner, make_provider(), "Hello?")
    assert run.status == "succeeded"
    client = staff_client(user)

    html = client.get(OMITTED, {"why__exact": "transient"}).content.decode()

    attempts = list(OmittedAttempt.objects.filter(session=session).order_by("edit__seq"))
    assert [a.why for a in attempts] == ["transient", "transient"]
    assert [a.retry_succeeded for a in attempts] == [False, True]  # the first retry was dropped too
    assert "429" in attempts[0].error
    assert all(a.target_entry_id in html for a in attempts)
    failures = client.get(OMITTED, {"retry_succeeded__exact": "0"}).content.decode()
    assert attempts[0].target_entry_id in failures and attempts[1].target_entry_id not in failures
    assert "0 omitted" in client.get(OMITTED, {"why__exact": "overflow"}).content.decode()


def test_a_hand_made_omission_is_manual_until_an_answer_follows(user) -> None:
    owner = user("dee")
    session = seeded_session(owner, turns=2)
    session_services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "context_edit", "targetId": "a1", "replacement": None}],
    )
    session_services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "context_edit", "targetId": "a0", "replacement": {"content": "shorter"}}],
    )
    # Recorded by the append itself: no page has been opened yet.
    (attempt,) = OmittedAttempt.objects.filter(omits=True)
    assert attempt.why == "manual" and attempt.retry_succeeded is None and attempt.target_role == "assistant"
    assert OmittedAttempt.objects.get(target_entry_id="a0").omits is False  # a replacement omits nothing
    client = staff_client(user)

    listed = rows_of(client.get(OMITTED).content.decode())[1:]
    assert len(listed) == 1 and f'#entry={attempt.target_entry_id}"' in listed[0]
    answer = {
        "role": "assistant",
        "content": [{"type": "text", "text": "again"}],
        "provider": "p",
        "model": "m",
        "stopReason": "stop",
        "usage": {"input": 1, "output": 1},
        "timestamp": 1,
    }
    session_services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": answer}]
    )
    attempt.refresh_from_db()
    assert attempt.retry_succeeded is True  # settled by the answer's own append


def test_opening_the_audit_pages_writes_nothing(user) -> None:
    owner = user("eve")
    session = seeded_session(owner, turns=1)
    session_services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "context_edit", "targetId": "a0", "replacement": None}],
    )
    OmittedAttempt.objects.all().delete()
    anonymous = Client().get(OMITTED)
    staff = staff_client(user).get(OMITTED)
    assert anonymous.status_code == 302 and staff.status_code == 200
    assert not OmittedAttempt.objects.exists()


def test_an_omission_rolls_back_with_its_append(user) -> None:
    owner = user("fin")
    session = seeded_session(owner, turns=1)
    with pytest.raises(RuntimeError), transaction.atomic():
        session_services.append_entries(
            session=session,
            actor=session.owner,
            entries=[{"type": "context_edit", "targetId": "a0", "replacement": None}],
        )
        assert OmittedAttempt.objects.filter(session=session).count() == 1
        raise RuntimeError("the request failed after the append")
    assert not OmittedAttempt.objects.filter(session=session).exists()


def test_audit_pages_are_for_staff_only(user) -> None:
    member = Client()
    member.force_login(user("eve"))
    anonymous = Client()
    for url in (OMITTED, COMPACTIONS, ACTIONS, USAGE, "/admin/"):
        for client in (member, anonymous):
            response = client.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_index_links_the_audit_pages(user) -> None:
    html = staff_client(user).get("/admin/").content.decode()

    for link, text in (
        (OMITTED, "Omitted failed attempts"),
        (COMPACTIONS, "Compaction history"),
        (ACTIONS, "Action log"),
        (USAGE, "Usage"),
    ):
        assert f'href="{link}">{text}</a>' in html


def test_the_action_log_cannot_be_changed_through_the_admin(user) -> None:
    owner = user("fay")
    session = seeded_session(owner, turns=1)
    team = Team.objects.create(name="core")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    session_services.share_with_team(actor=owner, session=session, team=team, access="viewer")
    row = ActionLog.objects.get(action="share")
    client = staff_client(user)

    listing = client.get(ACTIONS, {"action__exact": "share"}).content.decode()
    detail = client.get(f"{ACTIONS}{row.pk}/change/").content.decode()

    assert "fay" in listing and "share" in listing and f"/sessions/{session.pk}/" in listing
    assert 'name="_save"' not in detail and "deletelink" not in detail
    assert client.post(f"{ACTIONS}{row.pk}/change/", {"action": "import"}).status_code == 403
    assert client.post(f"{ACTIONS}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get(f"{ACTIONS}add/").status_code == 403
    bulk = client.post(ACTIONS, {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert bulk.status_code in (200, 302)
    assert ActionLog.objects.filter(pk=row.pk, action="share").exists()
    assert client.get(ACTIONS, {"q": session.name or session.pi_id}).status_code == 200


def test_usage_counts_every_branch_and_the_summaries(user, make_provider, server, settings) -> None:
    session, _ = overflow_run(user, make_provider, server, settings)
    owner = session.owner
    other = user("gus")
    team = Team.objects.create(name="platform")
    TeamMembership.objects.create(team=team, user=owner, role="editor")
    # A team's usage is that of the sessions shared with it: this one is ada's only session.
    SessionShare.objects.create(session=session, team=team)
    # An abandoned branch: a second answer to the first question that the leaf no longer reaches.
    abandoned = {
        "role": "assistant",
        "content": [{"type": "text", "text": "old idea"}],
        "provider": "openai",
        "model": "gpt-x",
        "stopReason": "stop",
        "usage": {"input": 1000, "output": 50, "cacheRead": 7, "cacheWrite": 3, "cost": {"total": 0.25}},
        "timestamp": 1,
    }
    session_services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "message", "parentId": "u0", "message": abandoned}],
    )
    session_services.set_leaf(session=session, actor=session.owner, entry_id=entries(session)[-2]["id"])
    seeded_session(other, turns=1)  # no usage in imported seed answers

    rollup = compute_rollup()

    by_model = dict(rollup.by_model)
    gpt = by_model["openai/gpt-x"]
    assert (gpt.input, gpt.output, gpt.cache_read, gpt.cache_write, gpt.cost) == (1000, 50, 7, 3, 0.25)
    claude = by_model["anthropic/claude-test"]
    assert claude.input == 900 and claude.messages == 2  # the failed attempt and the retried answer
    compaction = CompactionRun.objects.get(session=session)
    ada = dict(rollup.by_user)["ada"]
    expected_summary = 1 if compaction.usage is not None else 0
    # Six seeded answers without usage, the failed attempt, the answer after it and the abandoned one.
    assert ada.messages == 6 + 3 + expected_summary and ada.input == 1900 + _input(compaction.usage)
    assert dict(rollup.by_team)["platform"] == ada
    html = staff_client(user).get(USAGE).content.decode()
    assert "openai/gpt-x" in html and "platform" in html and "0.2500" in html


def _input(usage: Any) -> int:
    return int((usage or {}).get("input") or 0)


def test_usage_ignores_values_that_are_not_numbers(user) -> None:
    owner = user("hal")
    session = seeded_session(owner, turns=1)
    message = {
        "role": "assistant",
        "content": [],
        "provider": "p",
        "model": "m",
        "usage": {"input": "lots", "output": 4, "cost": {"total": 0.5}},
        "stopReason": "stop",
        "timestamp": 1,
    }
    session_services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": message}]
    )

    rollup = compute_rollup()

    totals = dict(rollup.by_model)["p/m"]
    assert (totals.input, totals.output, totals.cost) == (0, 4, 0.5)  # a non-number counts as nothing
    assert totals.messages == 1


def test_an_import_records_its_omissions_without_reading_every_answer(user) -> None:
    """A bulk import audits its edits but never loads its assistant messages (100k of them held the file)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Entry

    source = seeded_session(user("gil"), turns=3)
    session_services.append_entries(
        session=source,
        actor=source.owner,
        entries=[{"type": "context_edit", "targetId": "a1", "replacement": None}],
    )
    answer = {"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1}
    session_services.append_entries(
        session=source, actor=source.owner, entries=[{"type": "message", "message": answer}]
    )
    lines = [
        source.header_raw,
        *Entry.objects.filter(session=source).order_by("seq").values_list("raw", flat=True),
    ]
    with CaptureQueriesContext(connection) as queries:
        imported = session_services.import_jsonl(actor=user("hal"), data="\n".join(lines).encode()).session
    (attempt,) = OmittedAttempt.objects.filter(session=imported)
    assert attempt.omits and attempt.target_entry_id == "a1" and attempt.retry_succeeded is True
    answers_read = [
        q["sql"] for q in queries.captured_queries if '."raw"' in q["sql"] and "'assistant'" in q["sql"]
    ]
    assert answers_read == []
