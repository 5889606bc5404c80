"""A member learns nothing through the team's activity of sessions outside their reach: not the
owner's private session, not a session shared with another team, not a deleted one; in the page, its
config, the REST answer (rows included), the CSV and the digest alike."""

from __future__ import annotations

from datetime import date

import pytest
from django.core import mail
from django.test import Client, override_settings

from activity import services as activity_services
from sessions_app import services
from teams.models import Team, TeamMembership

from .conftest import RANGE, WEEK, Crew, import_session, worked

pytestmark = pytest.mark.django_db

# Their paths, and any team total that counted them ($0.75 is what the team shares).
SECRETS = ("secret_plan", "elsewhere_only", "gone_soon", *(f"{n}.75" for n in (4, 8, 12, 16, 20, 24, 28)))


def _everything_vera_can_get(crew: Crew) -> list[str]:
    browser = Client()
    browser.force_login(crew.vera)
    api = crew.client(crew.vera)
    team = crew.team.pk
    with override_settings(MAILERS={"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}):
        week = date.fromisoformat(WEEK)
        activity_services.send_team_digest(actor=activity_services.DIGEST_WORKER, team_id=team, week=week)
    mails = [m for m in mail.outbox if m.to == [crew.vera.email]]
    assert mails, "vera got her digest"
    bodies = [m.body for m in mails] + [str(a[0]) for m in mails for a in getattr(m, "alternatives", [])]
    return [
        browser.get(f"/teams/{team}/activity/", RANGE).content.decode(),
        browser.get(f"/teams/{team}/activity.csv", RANGE).content.decode(),
        api.get(f"/api/teams/{team}/activity/", {**RANGE, "rows": "true"}).content.decode(),
        *bodies,
    ]


def test_sessions_outside_the_team_leave_no_trace(crew: Crew) -> None:
    other = Team.objects.create(name="other")
    TeamMembership.objects.create(team=other, user=crew.olga, role=TeamMembership.Role.OWNER)
    elsewhere = import_session(crew.olga, worked(8.0, "src/elsewhere_only.py"), "elsewhere")
    services.share_with_team(session=elsewhere, team=other, access="viewer", actor=crew.olga)
    gone = import_session(crew.eddie, worked(16.0, "src/gone_soon.py"), "gone")
    services.share_with_team(session=gone, team=crew.team, access="viewer", actor=crew.eddie)
    services.delete_session(session=gone, actor=crew.eddie)

    seen = _everything_vera_can_get(crew)
    for text in seen:
        for secret in SECRETS:
            assert secret not in text, (secret, text[:500])
    page, csv_text, answer, *mails = seen
    assert "$0.75" in page and "src/shared.py" in mails[0]  # what the team shares is there
    assert "0.250000" in csv_text and '"cost":0.75' in answer.replace(" ", "")
