"""Review write use cases: request (and request again), decide, withdraw; and the outdated mark an append
sets at write time.

Each use case validates, authorizes, writes with its action-log row in one transaction, and announces
after commit: the session's open pages, the inboxes (and mail) of whom it concerns, and the signals
``review_requested`` / ``review_decided``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, LinkActor, SystemActor, actor_name, user_of
from core.staff import authorize_staff
from discussion.facade import notify
from reviews import signals
from reviews.domain.status import (
    APPROVED,
    CHANGES,
    DECISIONS,
    OUTDATED,
    PENDING,
    WITHDRAWN,
    InvalidReview,
    check_note,
    overall,
)
from reviews.models import Review, Reviewer
from reviews.verbs import Action
from sessions_app.facade import ChatSession, Entry, access, path_rows
from teams.facade import Team

__all__ = [
    "MAX_REVIEWERS",
    "ReviewClosed",
    "decide_review",
    "mark_outdated",
    "request_review",
    "rerequest_review",
    "withdraw_review",
]

log = logging.getLogger(__name__)

MAX_REVIEWERS = 20
OPEN = (PENDING, APPROVED, CHANGES)
REVIEW_EVENT = "review"
NOT_A_REVIEWER = "Only the people asked to review may approve or request changes."
NOT_THE_REQUESTER = "Only the person who asked for the review may withdraw it or ask again."
NOT_A_WRITER = "Only those who may change a session may ask for its review."


class ReviewClosed(Exception):
    """The review cannot take this any more (withdrawn, or outdated until asked again): answered 409."""


def request_review(
    *,
    actor: Actor,
    session: ChatSession,
    reviewers: Sequence[str],
    entry_id: str | None = None,
    note: object = None,
    team_id: int | None = None,
) -> Review:
    """Ask named teammates to review the session (``entry_id`` None) or the branch ending at ``entry_id``.

    The requester must be able to change the session and each reviewer to read it; the review belongs
    to a team the session is shared with that holds every reviewer (``team_id`` picks one).
    """
    requester = _signed_in(actor)
    text = check_note(note)
    try:
        grant = access.authorize(actor, session, access.WRITE)
    except access.Forbidden as exc:
        raise access.Forbidden(NOT_A_WRITER) from exc
    people = _reviewers(session, reviewers, requester)
    team = _team_of(session, people, team_id)
    node: Entry | None = grant.entry(entry_id) if entry_id is not None else None
    now = timezone.now()
    with transaction.atomic():
        # Held like an append holds it: an entry stored after this commits is seen as new by the mark.
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        review = Review.objects.create(
            session=locked,
            entry_id=entry_id,
            entry_seq=node.seq if node is not None else None,
            entry_depth=node.depth if node is not None else None,
            seq=locked.next_seq,
            team=team,
            requester=requester,
            requester_name=actor_name(actor)[:150],
            note=text,
            status=PENDING,
            requested_at=now,
        )
        Reviewer.objects.bulk_create([Reviewer(review=review, user=u) for u in people])
        record_action(
            actor=actor,
            action=Action.REVIEW_REQUEST,
            session=locked,
            team=team,
            review=review.pk,
            entry=entry_id,
            reviewers=[u.get_username() for u in people],
        )
        _asked(review, [u.pk for u in people], actor)
    return review


def rerequest_review(*, actor: Actor, review_id: int) -> Review:
    """Ask the same reviewers again (after new entries made it outdated, or changes were made): the
    decisions start over and the outdated mark is cleared."""
    review = _find(actor, review_id)
    requester = _signed_in(actor)
    if review.requester_id != requester.pk:
        raise access.Forbidden(NOT_THE_REQUESTER)
    if review.status == WITHDRAWN:
        raise ReviewClosed("This review was withdrawn; request a new one.")
    access.authorize(actor, review.session, access.WRITE)
    people = list(get_user_model().objects.filter(pk__in=review.reviewers.values("user_id")))
    _check_readers(review.session, people)
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=review.session_id)
        review = Review.objects.select_for_update().get(pk=review.pk)
        Reviewer.objects.filter(review=review).update(decision=PENDING, note="", decided_at=None)
        review.seq = locked.next_seq
        review.status = PENDING
        review.outdated_at = None
        review.outdated_by = ""
        review.requested_at = timezone.now()
        review.save(update_fields=["seq", "status", "outdated_at", "outdated_by", "requested_at"])
        record_action(
            actor=actor,
            action=Action.REVIEW_REQUEST,
            session=locked,
            team=review.team,
            review=review.pk,
            entry=review.entry_id,
            reviewers=[u.get_username() for u in people],
            again=True,
        )
        _asked(review, [u.pk for u in people], actor)
    return review


def decide_review(*, actor: Actor, review_id: int, decision: object, note: object = None) -> Review:
    """Approve, or request changes, with an optional note; a reviewer may change their decision."""
    if decision not in DECISIONS:
        raise InvalidReview(f"decision must be one of {', '.join(DECISIONS)}.", field="decision")
    text = check_note(note)
    review = _find(actor, review_id)
    user = _signed_in(actor)
    mine = Reviewer.objects.filter(review=review, user=user).first()
    if mine is None or not _in_team(user, review.team_id):
        raise access.Forbidden(NOT_A_REVIEWER)
    if review.status == WITHDRAWN:
        raise ReviewClosed("This review was withdrawn.")
    if review.status == OUTDATED:
        raise ReviewClosed("New entries were added since the review was requested; it must be asked again.")
    with transaction.atomic():
        review = Review.objects.select_for_update().get(pk=review.pk)
        if review.status not in OPEN:
            raise ReviewClosed(f"This review is {review.status}.")
        mine.decision = str(decision)
        mine.note = text
        mine.decided_at = timezone.now()
        mine.save(update_fields=["decision", "note", "decided_at"])
        _refresh_status(review)
        record_action(
            actor=actor,
            action=Action.REVIEW_DECIDE,
            session=review.session,
            team=review.team,
            review=review.pk,
            decision=mine.decision,
            status=review.status,
        )
        said = "approved" if mine.decision == APPROVED else "requested changes to"
        what = _what(review)
        line = f"{said} {what}" + (f": {text}" if text else "")
        if review.requester_id is not None and review.requester_id != user.pk:
            notify(
                recipients=[review.requester_id],
                session=review.session,
                author_name=actor_name(actor),
                text=line,
                entry_id=review.entry_id,
            )
        transaction.on_commit(partial(_announce, review.session_id, review.pk))
        transaction.on_commit(
            partial(signals.review_decided.send, sender=Review, review=review, reviewer=mine, actor=actor)
        )
    return review


def withdraw_review(*, actor: Actor, review_id: int, as_staff: bool = False) -> Review:
    """Take a review request back; only its requester may. Withdrawing twice changes nothing.

    ``as_staff``: a staff member withdraws any review from the admin (one left open by someone who
    left); the row says ``by_staff``.
    """
    if as_staff:
        authorize_staff(actor, "reviews.change_review")
        found = Review.objects.select_related("session", "team").filter(pk=review_id).first()
        if found is None:
            raise access.NotVisible(f"Review not found: {review_id}")
        review = found
    else:
        review = _find(actor, review_id)
        user = _signed_in(actor)
        if review.requester_id != user.pk:
            raise access.Forbidden(NOT_THE_REQUESTER)
    with transaction.atomic():
        review = Review.objects.select_for_update().get(pk=review.pk)
        if review.status == WITHDRAWN:
            return review
        review.withdrawn_at = timezone.now()
        review.status = WITHDRAWN
        review.save(update_fields=["withdrawn_at", "status"])
        record_action(
            actor=actor,
            action=Action.REVIEW_WITHDRAW,
            session=review.session,
            team=review.team,
            review=review.pk,
            **({"by_staff": True} if as_staff else {}),
        )
        transaction.on_commit(partial(_announce, review.session_id, review.pk))
    return review


def mark_outdated(
    session_id: int, first_seq: int, last_seq: int, rows: Iterable[Any] | None = None
) -> list[int]:
    """Mark outdated the open reviews that entries ``first_seq``..``last_seq`` (just committed) change:
    every review of the whole session, and a branch's review when a new entry descends from its node.

    Part of the append that stored the entries, whose own action-log row stands for it: no row here.
    Return the reviews marked.
    """
    reviews = list(
        Review.objects.filter(session_id=session_id, status__in=OPEN, seq__lte=last_seq).only(
            "pk", "entry_id", "entry_seq", "entry_depth", "seq", "session_id"
        )
    )
    if not reviews:
        return []
    session = ChatSession.objects.filter(pk=session_id).first()
    if session is None:
        return []
    if rows is None:
        rows = Entry.objects.filter(session_id=session_id, seq__gte=first_seq, seq__lte=last_seq).only(
            "seq", "entry_id", "parent_seq", "depth", "segment"
        )
    new = [r for r in rows if r.entry_id is not None]
    marked: dict[int, str] = {}
    for review in reviews:
        fresh = [r for r in new if r.seq >= review.seq]
        hit = (
            _first_descendant(session, review, fresh)
            if review.entry_seq is not None
            else next(iter(fresh), None)
        )
        if hit is not None and hit.entry_id is not None:
            marked[review.pk] = hit.entry_id
    if not marked:
        return []
    now = timezone.now()
    with transaction.atomic():
        for pk, entry in marked.items():
            Review.objects.filter(pk=pk, status__in=OPEN).update(
                status=OUTDATED, outdated_at=now, outdated_by=entry
            )
        transaction.on_commit(partial(_announce, session_id, *marked))
    return list(marked)


def _first_descendant(session: ChatSession, review: Review, rows: list[Any]) -> Any:
    """Return the first of ``rows`` whose path passes through the review's node, or None.

    Only the batch's own roots are checked (rows whose parent is not in the batch): a row deeper in the
    batch descends from the node only if its root in the batch does, since the node is older than all.
    """
    depth = review.entry_depth if review.entry_depth is not None else -1
    seqs = {r.seq for r in rows}
    for row in rows:
        if row.parent_seq in seqs or row.depth is None or row.depth <= depth:
            continue
        on_path = path_rows(session, row, min_depth=depth, max_depth=depth, fields=("seq",))
        if any(seq == review.entry_seq for (seq,) in on_path):
            return row
    return None


def _signed_in(actor: Actor) -> Any:
    if isinstance(actor, LinkActor):
        raise access.Forbidden("A share link may read a session but not take part in its review; sign in.")
    if isinstance(actor, SystemActor) or not getattr(actor, "is_authenticated", False):
        raise access.NotSignedIn()
    return user_of(actor)


def _find(actor: Actor, review_id: int) -> Review:
    """Return the review if the actor may read its session and belongs to its team (or asked for it),
    else NotVisible."""
    user = _signed_in(actor)
    review = Review.objects.select_related("session", "team").filter(pk=review_id).first()
    if review is None or not (review.requester_id == user.pk or _in_team(user, review.team_id)):
        raise access.NotVisible(f"Review not found: {review_id}")
    try:
        access.authorize(actor, review.session, access.READ)
    except access.NotVisible as exc:
        raise access.NotVisible(f"Review not found: {review_id}") from exc
    return review


def _in_team(user: Any, team_id: int) -> bool:
    return Team.objects.filter(pk=team_id, memberships__user=user).exists()


def _reviewers(session: ChatSession, names: Sequence[str], requester: Any) -> list[Any]:
    wanted: list[str] = []
    for name in names:
        clean = str(name).strip().lstrip("@") if isinstance(name, str) else ""
        if not clean:
            raise InvalidReview("Each reviewer is a username.", field="reviewers")
        if clean not in wanted:
            wanted.append(clean)
    if not wanted:
        raise InvalidReview("Name at least one reviewer.", field="reviewers")
    if len(wanted) > MAX_REVIEWERS:
        raise InvalidReview(f"At most {MAX_REVIEWERS} reviewers.", field="reviewers")
    found = {
        u.get_username(): u for u in get_user_model().objects.filter(username__in=wanted, is_active=True)
    }
    missing = [n for n in wanted if n not in found]
    if missing:
        raise InvalidReview(f"Nobody is named {', '.join('@' + n for n in missing)}.", field="reviewers")
    people = [found[n] for n in wanted]
    if any(u.pk == requester.pk for u in people):
        raise InvalidReview("You cannot review your own request; name someone else.", field="reviewers")
    _check_readers(session, people)
    return people


def _check_readers(session: ChatSession, people: list[Any]) -> None:
    cannot = [
        u.get_username()
        for u in people
        if not ChatSession.objects.visible_to(u).filter(pk=session.pk).exists()
    ]
    if cannot:
        listed = ", ".join(f"@{n}" for n in cannot)
        raise InvalidReview(
            f"{listed} cannot read this session. Share it with their team first, or name someone else.",
            field="reviewers",
        )


def _team_of(session: ChatSession, people: list[Any], team_id: int | None) -> Team:
    """Return the team the review belongs to: one the session is shared with that holds every reviewer."""
    teams = Team.objects.filter(shares__session=session)
    for person in people:
        teams = teams.filter(pk__in=Team.objects.filter(memberships__user=person).values("pk"))
    if team_id is not None:
        teams = teams.filter(pk=team_id)
    team = teams.order_by("pk").first()
    if team is None:
        where = "the team you named" if team_id is not None else "one team this session is shared with"
        raise InvalidReview(f"The reviewers must all belong to {where}.", field="teamId")
    return team


def _what(review: Review) -> str:
    title = review.session.title
    return f"the branch at {review.entry_id} of “{title}”" if review.entry_id else f"“{title}”"


def _asked(review: Review, reviewer_ids: list[int], actor: Actor) -> None:
    """Tell the reviewers (inbox and mail) and the page, in the use case's transaction."""
    what = "a branch of this session" if review.entry_id else "this session"
    line = f"asked you to review {what}" + (f": {review.note}" if review.note else "")
    notify(
        recipients=reviewer_ids,
        session=review.session,
        author_name=actor_name(actor),
        text=line,
        entry_id=review.entry_id,
    )
    transaction.on_commit(partial(_announce, review.session_id, review.pk))
    transaction.on_commit(partial(signals.review_requested.send, sender=Review, review=review, actor=actor))


def _refresh_status(review: Review) -> None:
    decisions = list(Reviewer.objects.filter(review=review).values_list("decision", flat=True))
    review.status = overall(
        decisions, withdrawn=review.withdrawn_at is not None, outdated=review.outdated_at is not None
    )
    review.save(update_fields=["status"])


def _announce(session_id: int, *review_ids: int) -> None:
    """Tell the session's open pages that its reviews changed; they re-read them over HTTP."""
    realtime.broadcast(session_id, REVIEW_EVENT, reviews=list(review_ids))
