"""Write use cases of team activity: a member's digest choice, and sending a team's weekly digest."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.core.mail import mailers
from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from activity import digest
from activity.domain.weeks import last_full_week, monday
from activity.models import DigestChoice, DigestSent
from activity.verbs import Action
from core.actors import Actor, SystemActor, user_of
from core.errors import NotSignedIn, NotVisible
from teams.facade import Team, TeamMembership, team_of

log = logging.getLogger(__name__)

__all__ = ["DIGEST_WORKER", "DigestOutcome", "send_team_digest", "set_digest_choice"]

DIGEST_WORKER = SystemActor("digest-worker")


def set_digest_choice(*, actor: Actor, team_id: int, wanted: bool) -> bool:
    """Say whether the acting member wants the team's weekly digest; members only, each for themselves."""
    user = user_of(actor)
    if user is None:
        raise NotSignedIn("Sign in to choose your email.")
    team = team_of(user, team_id, owner=False)
    with transaction.atomic():
        DigestChoice.objects.update_or_create(user=user, team=team, defaults={"wanted": wanted})
        record_action(actor=actor, action=Action.DIGEST_CHOICE, session=None, team=team, wanted=wanted)
    return wanted


def digest_wanted(user: Any, team: Team) -> bool:
    """Whether a member gets the team's digest: yes unless they said no."""
    choice = DigestChoice.objects.filter(user=user, team=team).values_list("wanted", flat=True).first()
    return choice is not False


@dataclass(frozen=True, slots=True)
class DigestOutcome:
    team: int
    week: date
    sent: int  # messages sent now
    skipped: int  # members who opted out, have no address, or had theirs already


def send_team_digest(*, actor: Actor, team_id: int, week: date | None = None) -> DigestOutcome:
    """Send a team's digest of one ISO week (default: last week) to each member who wants it, once.

    Each member's message is marked sent in the transaction that sends it: a retried task or a second
    run sends nobody a second copy, and a mail server that refuses rolls the mark back for the retry.
    One action-log row says how many left, when any did.
    Only the sessions shared with the team count, so every member may read all that it names.
    """
    team = Team.objects.filter(pk=team_id).first()
    if team is None:
        raise NotVisible(f"Team not found: {team_id}")
    week = monday(week) if week is not None else last_full_week(timezone.now().date())
    content = digest.build(team, week)
    if content.is_empty:
        # A quiet week is no news: nobody gets a mail saying so.
        return DigestOutcome(team=team.pk, week=week, sent=0, skipped=0)
    members = list(
        TeamMembership.objects.filter(team=team, user__is_active=True)
        .select_related("user")
        .order_by("user__username")
    )
    sent = skipped = 0
    for membership in members:
        user = membership.user
        if not user.email or not digest_wanted(user, team):
            skipped += 1
            continue
        # One transaction per member: what was sent stays marked when a later address fails.
        with transaction.atomic():
            # The row's unique key is the guard: a second sender waits on it, then finds it taken.
            _mark, created = DigestSent.objects.get_or_create(team=team, week=week, user=user)
            if not created:
                skipped += 1
                continue
            # Sent inside the transaction: a mail server that refuses rolls the mark back for the retry.
            mailers.default.send_messages([digest.message(content, user)])
            sent += 1
    if sent:
        with transaction.atomic():
            record_action(
                actor=actor,
                action=Action.DIGEST_SEND,
                session=None,
                team=team,
                week=week.isoformat(),
                sent=sent,
            )
    log.info("digest of team %s for %s: %s sent, %s skipped", team.pk, week, sent, skipped)
    return DigestOutcome(team=team.pk, week=week, sent=sent, skipped=skipped)


def send_all_digests(*, actor: Actor, week: date | None = None) -> int:
    """Send every team's digest of last week (the weekly beat); return the messages sent."""
    return sum(
        send_team_digest(actor=actor, team_id=pk, week=week).sent
        for pk in Team.objects.order_by("pk").values_list("pk", flat=True)
    )
