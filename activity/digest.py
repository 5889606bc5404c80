"""The weekly digest of a team: what its shared sessions saw last week, as text and HTML."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from activity.domain.weeks import label
from activity.queries import Numbers, TopFile, team_report, top_files
from teams.facade import Team

__all__ = ["Digest", "build", "message"]

TOP_PEOPLE = 5


@dataclass(frozen=True, slots=True)
class Digest:
    team: Team
    week: date
    totals: Numbers
    people: list[tuple[str, Numbers]]  # the most active members first
    files: list[TopFile]

    @property
    def is_empty(self) -> bool:
        t = self.totals
        return not (t.answers or t.runs or t.reviews or t.cost or self.files)

    @property
    def label(self) -> str:
        return label(self.week)


def build(team: Team, week: date) -> Digest:
    """Return the team's digest of one ISO week (the same reads as the activity page)."""
    report = team_report(team, week, week, cells=False)
    people = [(report.names.get(p, ""), report.by_person[p]) for p in report.people()[:TOP_PEOPLE]]
    return Digest(team=team, week=week, totals=report.totals, people=people, files=top_files(team, week))


def message(digest: Digest, user: Any) -> EmailMultiAlternatives:
    """One member's copy: the same numbers for everyone in the team, addressed to them."""
    base = settings.PIWEB_BASE_URL.rstrip("/")
    end = digest.week + timedelta(days=6)
    dates = f"from={digest.week.isoformat()}&to={end.isoformat()}"
    context = {
        "digest": digest,
        "user": user,
        "first": digest.week,
        "last": end,
        "page": f"{base}/teams/{digest.team.pk}/activity/?{dates}",
    }
    text = render_to_string("activity/digest.txt", context)
    mail = EmailMultiAlternatives(
        # A header holds one line, whatever a team's name holds.
        subject=f"[piweb] {' '.join(digest.team.name.split())}: the week {digest.label}",
        body=text,
        to=[user.email],
    )
    mail.attach_alternative(render_to_string("activity/digest.html", context), "text/html")
    return mail
