"""The weekly digest leaves through the SMTP backend to a real SMTP server on loopback: once per member
and week, to those who want it, naming only what the team's shared sessions did."""

from __future__ import annotations

from email.message import Message
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from actionlog.models import ActionLog
from activity import tasks
from tests.discussion.smtp import smtp_server

from .conftest import WEEK, Crew

pytestmark = pytest.mark.django_db(transaction=True)


def _smtp(settings: Any, port: int) -> None:
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5},
        }
    }
    settings.PIWEB_BASE_URL = "https://piweb.example.test"


def _parts(message: Message) -> dict[str, str]:
    found = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            found[part.get_content_type()] = part.get_payload(decode=True).decode()
    return found


def test_each_member_gets_one_digest_of_the_teams_shared_sessions(crew: Crew, settings: Any) -> None:
    with smtp_server() as (port, inbox):
        _smtp(settings, port)
        out = StringIO()
        call_command("send_team_digest", str(crew.team.pk), "--week", WEEK, stdout=out)
        messages = inbox.wait(3)
        assert "3 sent" in out.getvalue()
    assert sorted(to for tos, _ in messages for to in tos) == [
        "eddie@example.test",
        "olga@example.test",
        "vera@example.test",
    ]  # oscar is in another team
    _, first = messages[0]
    assert first["Subject"] == "[piweb] crew: the week 2026-W01"
    parts = _parts(first)
    assert set(parts) == {"text/plain", "text/html"}
    text, html = parts["text/plain"], parts["text/html"]
    assert "Sessions: 2" in text and "Cost: $0.75" in text and "Runs: 0 (0 failed)" in text
    assert "src/shared.py" in text and "src/eddie.py" in text
    assert "<code>src/shared.py</code>" in html and "$0.75" in html
    # olga's private session is in nobody's digest, hers included.
    for _, message in messages:
        for body in _parts(message).values():
            assert "secret_plan" not in body and "$4.75" not in body
    link = f"https://piweb.example.test/teams/{crew.team.pk}/activity/?from=2025-12-29&to=2026-01-04"
    assert link in text
    assert ActionLog.objects.filter(action="digest_send", team=crew.team).count() == 1


def test_a_second_run_sends_nothing_again_and_opted_out_members_get_none(crew: Crew, settings: Any) -> None:
    optout = crew.client(crew.vera).put(
        f"/api/teams/{crew.team.pk}/activity/digest/", {"digest": False}, format="json"
    )
    assert optout.status_code == 200
    with smtp_server() as (port, inbox):
        _smtp(settings, port)
        assert tasks.send_team_digest.apply(args=(crew.team.pk, WEEK)).get() == 2
        assert tasks.send_team_digest.apply(args=(crew.team.pk, WEEK)).get() == 0  # a retried task
        call_command("send_team_digest", str(crew.team.pk), "--week", WEEK, stdout=StringIO())
        messages = inbox.wait(3, timeout=2)
    assert sorted(to for tos, _ in messages for to in tos) == ["eddie@example.test", "olga@example.test"]


def test_a_refused_mail_is_sent_by_the_retry_and_the_others_are_not_sent_twice(
    crew: Crew, settings: Any
) -> None:
    from tests.procs import free_port

    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": free_port(), "timeout": 2},  # nothing listens there
        }
    }
    with pytest.raises(OSError):
        tasks.send_team_digest.apply(args=(crew.team.pk, WEEK)).get()
    with smtp_server() as (port, inbox):
        _smtp(settings, port)
        assert tasks.send_team_digest.apply(args=(crew.team.pk, WEEK)).get() == 3
        assert len(inbox.wait(3)) == 3


def test_a_quiet_week_sends_nothing(crew: Crew, settings: Any) -> None:
    with smtp_server() as (port, inbox):
        _smtp(settings, port)
        assert tasks.send_team_digest.apply(args=(crew.team.pk, "2026-03-02")).get() == 0
        assert inbox.wait(1, timeout=1) == []


def test_the_weekly_beat_sends_every_teams_last_week(crew: Crew, settings: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from sessions_app import services

    from .conftest import import_session, worked

    day = datetime.now(UTC) - timedelta(days=7)
    stamp = day.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    recent = import_session(crew.vera, [{**e, "timestamp": stamp} for e in worked(1.0, "src/v.py")], "recent")
    services.share_with_team(session=recent, team=crew.team, access="viewer", actor=crew.vera)
    with smtp_server() as (port, inbox):
        _smtp(settings, port)
        assert tasks.send_digests.apply().get() == 3  # crew's three members; "elsewhere" had a quiet week
        messages = inbox.wait(3)
    text = _parts(messages[0][1])["text/plain"]
    assert "Sessions: 1" in text and "Cost: $1.00" in text and "src/v.py" in text
    assert ActionLog.objects.get(action="digest_send").actor_name == "digest-worker"
