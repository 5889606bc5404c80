"""Background work of team activity: the weekly digests (a beat sends them on Monday morning)."""

from __future__ import annotations

from datetime import date

from activity import services
from core.tasks import task


@task("activity.send_digests", retry_on=(OSError,))
def send_digests() -> int:
    """Send every team's digest of last week; a retry sends only what did not leave."""
    return services.send_all_digests(actor=services.DIGEST_WORKER)


@task("activity.send_team_digest", retry_on=(OSError,))
def send_team_digest(team_id: int, week: str | None = None) -> int:
    """Send one team's digest of last week, or of the week of ``week`` (an ISO day)."""
    day = date.fromisoformat(week) if week else None
    return services.send_team_digest(actor=services.DIGEST_WORKER, team_id=team_id, week=day).sent
