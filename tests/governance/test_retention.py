"""Sessions untouched longer than their rule are deleted through the owner's delete; held ones stay."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from actionlog.models import ActionLog
from governance import retention
from governance.models import LegalHold, TeamPolicy, UserRetention
from sessions_app import access, services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


def make(owner: Any, name: str, *, age_days: int) -> ChatSession:
    data = session_file(small_tree(), {**HEADER, "id": name})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{name}.jsonl").session
    ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(days=age_days))
    return session


def due_ids() -> dict[int, str]:
    return {d.session_id: d.rule for d in retention.due_sessions()}


def test_without_any_rule_nothing_is_ever_due(user: Callable[..., Any], settings: Any) -> None:
    settings.PIWEB_RETENTION_DAYS = None
    make(user("owner"), "ancient", age_days=5000)
    assert due_ids() == {}


def test_the_shortest_rule_that_applies_wins(user: Callable[..., Any], settings: Any) -> None:
    settings.PIWEB_RETENTION_DAYS = 90
    owner, strict = user("owner"), user("strict")
    UserRetention.objects.create(user=strict, retention_days=10)
    team = Team.objects.create(name="legal")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamPolicy.objects.create(team=team, retention_days=30)
    old = make(owner, "old", age_days=100)
    middling = make(owner, "middling", age_days=40)
    shared = make(owner, "shared", age_days=40)
    services.share_with_team(session=shared, team=team, access="viewer", actor=owner)
    ChatSession.objects.filter(pk=shared.pk).update(updated_at=timezone.now() - timedelta(days=40))
    strict_one = make(strict, "strict-one", age_days=11)
    make(strict, "strict-fresh", age_days=9)
    assert due_ids() == {
        old.pk: "server default",
        shared.pk: "team legal",
        strict_one.pk: "owner's rule",
    }
    assert middling.pk not in due_ids()


def test_a_legal_hold_exempts_a_session_and_is_logged(user: Callable[..., Any], settings: Any) -> None:
    settings.PIWEB_RETENTION_DAYS = 30
    owner, staff = user("owner"), user("auditor", is_staff=True)
    held = make(owner, "held", age_days=400)
    gone = make(owner, "gone", age_days=400)
    with pytest.raises(access.Forbidden):
        retention.place_hold(actor=owner, session=held, reason="mine")
    retention.place_hold(actor=staff, session=held, reason="litigation 2026-17")
    deleted = retention.apply_retention(actor=retention.RETENTION_WORKER)
    assert [d.session_id for d in deleted] == [gone.pk]
    assert ChatSession.objects.filter(pk=held.pk).exists()
    assert not ChatSession.objects.filter(pk=gone.pk).exists()  # hidden at once, purged by the worker
    row = ActionLog.objects.get(action="delete", session_number=gone.pk)
    assert (row.actor_kind, row.actor_name) == ("system", "retention-worker")
    hold_row = ActionLog.objects.get(action="hold")
    assert (hold_row.actor_name, hold_row.detail["reason"]) == ("auditor", "litigation 2026-17")
    with pytest.raises(access.Forbidden):
        retention.set_user_retention(actor=owner, user=owner, retention_days=1000)
    retention.lift_hold(actor=staff, session=held)
    assert not LegalHold.objects.exists()
    assert ActionLog.objects.filter(action="unhold", actor_name="auditor").count() == 1
    assert [d.session_id for d in retention.due_sessions()] == [held.pk]


def test_the_admin_dry_run_lists_what_would_go_and_deletes_nothing(
    user: Callable[..., Any], settings: Any
) -> None:
    settings.PIWEB_RETENTION_DAYS = 30
    owner = user("owner")
    staff = user("auditor", is_staff=True, is_superuser=True)
    due = make(owner, "due-one", age_days=45)
    held = make(owner, "held-one", age_days=45)
    LegalHold.objects.create(session=held, reason="kept")
    make(owner, "fresh-one", age_days=1)
    browser = Client()
    browser.force_login(staff)
    page = browser.get("/admin/governance/legalhold/retention-dry-run/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "due-one" in text and f"#{due.pk}" in text
    assert "held-one" not in text and "fresh-one" not in text
    assert ChatSession.objects.filter(pk=due.pk).exists()
    listing = browser.get("/admin/governance/legalhold/")
    assert "Retention dry run" in listing.content.decode()
    other = Client()
    other.force_login(owner)
    assert other.get("/admin/governance/legalhold/retention-dry-run/").status_code == 302  # to the login
