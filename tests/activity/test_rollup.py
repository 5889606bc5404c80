"""The rollup is kept on every way in: an import, an append with a cost, a run, a review; and repaired."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from actionlog.models import ActionLog
from activity.models import WeekActivity
from agent import signals as agent_signals
from agent.models import AgentRun
from agent.services import close_run
from sessions_app import signals

from .conftest import RANGE, Crew, answer, raw_counts

pytestmark = pytest.mark.django_db


def _report(crew: Crew, who: Any = None, **params: str) -> dict[str, Any]:
    answer_ = crew.client(who or crew.vera).get(f"/api/teams/{crew.team.pk}/activity/", {**RANGE, **params})
    assert answer_.status_code == 200, answer_.content
    return answer_.json()


def _numbers(body: dict[str, Any]) -> dict[str, Any]:
    keys = ("sessions", "answers", "runs", "failedRuns", "cost", "toolCalls", "filesChanged", "tools")
    found = {k: body[k] for k in keys}
    return {**found, "cost": round(found["cost"], 6)}


def test_an_import_counts_answers_tools_files_and_cost_for_the_owner(crew: Crew) -> None:
    body = _report(crew)
    totals = body["totals"]
    assert _numbers(totals) == _numbers(raw_counts(crew.team))
    assert totals["sessions"] == 2 and totals["cost"] == pytest.approx(0.75)
    assert totals["tools"] == {"write": 2, "read": 2, "bash": 2}
    people = {p["name"]: p for p in body["people"]}
    assert set(people) == {"olga", "eddie"}
    assert people["olga"]["cost"] == pytest.approx(0.25) and people["olga"]["filesChanged"] == 1
    assert people["eddie"]["answers"] == 4  # a1 and the answers calling three tools
    week = next(w for w in body["weeks"] if w["week"] == "2025-12-29")
    assert week["label"] == "2026-W01" and week["sessions"] == 2 and week["toolCalls"] == 6


def test_an_append_with_a_cost_adds_to_its_week(crew: Crew) -> None:
    appended = crew.client(crew.eddie).post(
        f"/api/sessions/{crew.shared.pk}/append/",
        {"entries": [answer("a9", "c3-r", 1.5, ts="2026-01-13T10:00:00.000Z")]},
        format="json",
    )
    assert appended.status_code in (200, 201), appended.content
    body = _report(crew)
    weeks = {w["week"]: w for w in body["weeks"]}
    assert weeks["2026-01-12"]["cost"] == pytest.approx(1.5)
    assert weeks["2026-01-12"]["answers"] == 1 and weeks["2026-01-12"]["sessions"] == 1
    # Written by eddie, but the session is olga's: its answers and cost count for her.
    olga = next(p for p in body["people"] if p["name"] == "olga")
    assert olga["cost"] == pytest.approx(1.75)
    assert _numbers(body["totals"]) == _numbers(raw_counts(crew.team))


def test_runs_count_for_whoever_started_them_and_failures_apart(crew: Crew) -> None:
    now = timezone.now().date().isoformat()
    failed = AgentRun.objects.create(
        session=crew.shared, requested_by=crew.eddie, prompt="go", status="running"
    )
    close_run(failed, status=AgentRun.Status.FAILED, error="the provider refused")
    done = AgentRun.objects.create(
        session=crew.shared, requested_by=crew.eddie, prompt="go", status="running"
    )
    done.status = AgentRun.Status.SUCCEEDED
    done.save(update_fields=["status"])
    agent_signals.run_closed.send(AgentRun, run=done)  # counted once, though both receivers heard it
    AgentRun.objects.create(session=crew.private, requested_by=crew.olga, prompt="go", status="succeeded")
    AgentRun.objects.create(session=crew.eddies, requested_by=crew.olga, prompt="go", status="queued")

    body = _report(crew, **{"from": now, "to": now})
    eddie = next(p for p in body["people"] if p["name"] == "eddie")
    assert (eddie["runs"], eddie["failedRuns"]) == (2, 1)
    assert body["totals"]["runs"] == 2  # the private session's run and the queued one are not counted
    assert body["weeks"][-1]["failedRuns"] == 1


def test_reviews_are_counted_from_the_action_log(crew: Crew) -> None:
    for actor, verb in ((crew.olga, "review_request"), (crew.vera, "review_decide")):
        ActionLog.objects.create(actor=actor, actor_name=actor.username, action=verb, session=crew.shared)
    ActionLog.objects.create(
        actor=crew.olga, actor_name="olga", action="review_request", session=crew.private
    )
    now = timezone.now().date().isoformat()
    body = _report(crew, **{"from": now, "to": now})
    assert body["totals"]["reviews"] == 2
    assert {p["name"]: p["reviews"] for p in body["people"]} == {"olga": 1, "vera": 1}


def test_reconcile_rebuilds_a_session_the_previous_release_wrote(crew: Crew) -> None:
    before = _report(crew)
    AgentRun.objects.create(session=crew.shared, requested_by=crew.eddie, prompt="go", status="running")
    WeekActivity.objects.filter(session=crew.shared).delete()  # written without the rollup
    AgentRun.objects.filter(session=crew.shared).update(status="succeeded")  # no signal, no save
    repaired = [r for _, r in signals.bookkeeping_checked.send(None, session_id=crew.shared.pk) if r]
    assert "activity" in repaired
    after = _report(crew, **{"from": RANGE["from"], "to": timezone.now().date().isoformat()})
    assert after["totals"]["answers"] == before["totals"]["answers"]
    assert after["totals"]["runs"] == 1
    assert after["totals"]["cost"] == pytest.approx(before["totals"]["cost"])
    # A session whose rollup is right is left alone.
    assert not [
        r for _, r in signals.bookkeeping_checked.send(None, session_id=crew.shared.pk) if r == "activity"
    ]


def test_an_extensions_tool_is_in_the_mix_beside_pis_own(crew: Crew) -> None:
    call = {"type": "toolCall", "id": "d1", "name": "deploy", "arguments": {"target": "staging"}}
    grep = {"type": "toolCall", "id": "g1", "name": "grep", "arguments": {"pattern": "TODO"}}
    entry = answer("a8", "c3-r", 0.0)
    entry["message"]["content"] = [call, grep]
    appended = crew.client(crew.olga).post(
        f"/api/sessions/{crew.shared.pk}/append/", {"entries": [entry]}, format="json"
    )
    assert appended.status_code in (200, 201), appended.content
    body = _report(crew)
    assert body["totals"]["tools"] == {"write": 2, "read": 2, "bash": 2, "deploy": 1, "grep": 1}
    assert body["tools"][-2:] in (["deploy", "grep"], ["grep", "deploy"])
    olga = next(p for p in body["people"] if p["name"] == "olga")
    assert olga["tools"]["deploy"] == 1 and olga["toolCalls"] == 5
    assert _numbers(body["totals"]) == _numbers(raw_counts(crew.team))
    # Grouped per week and per person by the database, or summed from each person's weeks: the same.
    assert {k: v for k, v in _report(crew, rows="true").items() if k != "rows"} == body


def test_rebuild_activity_recounts_what_was_written_before_the_rollup(crew: Crew) -> None:
    from io import StringIO

    from django.core.management import call_command

    before = _report(crew)
    WeekActivity.objects.all().delete()
    assert _report(crew)["totals"]["answers"] == 0
    out = StringIO()
    call_command("rebuild_activity", stdout=out)
    assert "3 session(s) recounted" in out.getvalue()
    assert _report(crew) == before
