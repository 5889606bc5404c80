"""Team policy on sharing: no new team share or link while a session holds a secret not redacted."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from governance.models import SecretFinding, TeamPolicy
from governance.scanning import scan_session_now
from sessions_app.facade import ChatSession, SharingRefused
from teams.facade import Team

__all__ = ["check_sharing"]


def check_sharing(sender: Any, *, session: ChatSession, team: Team | None, **kwargs: Any) -> None:
    """Refuse (409) sharing a session with unredacted secrets when a team of its owner's, or the team
    it is shared with, has the policy on. A session not fully scanned yet is scanned first."""
    teams = Q(team__memberships__user_id=session.owner_id)
    if team is not None:
        teams |= Q(team=team)
    policy = TeamPolicy.objects.filter(teams, block_sharing_with_findings=True).select_related("team").first()
    if policy is None:
        return
    scan_session_now(session.pk)
    count = SecretFinding.objects.filter(session=session, redacted_at__isnull=True).count()
    if count:
        what = "a team share" if team is not None else "a share link"
        raise SharingRefused(
            f"Team {policy.team.name}'s policy forbids {what} while the session holds {count} "
            f"unredacted secret{'s' if count != 1 else ''}; redact them first "
            f"(POST /api/sessions/{session.pk}/secrets/redact/)."
        )
