"""Where hooks hear of events in the apps below them, which never import hooks.

Every event goes through ``services.emit_event``. A receiver called inside its sender's transaction (a
run closing) works in a savepoint and logs its own failure: a hook never fails the write it reports.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from agent.facade import AgentRun
from agent.facade import signals as agent_signals
from discussion.facade import Comment
from discussion.facade import signals as discussion_signals
from documents.secrets import masked
from governance.facade import signals as governance_signals
from hooks.domain import events as kinds
from hooks.services import emit_event
from reviews.facade import Review, Reviewer
from reviews.facade import signals as review_signals
from sessions_app.facade import ChatSession
from sessions_app.facade import signals as session_signals

log = logging.getLogger(__name__)


def comment_written(sender: Any, *, comment_id: int, **kwargs: Any) -> None:
    """A comment posted or edited: the people it mentions hear of it (once per comment)."""
    try:
        comment = Comment.objects.select_related("session", "author").filter(pk=comment_id).first()
        if comment is None or comment.deleted_at is not None or not comment.mentions:
            return
        people = list(get_user_model().objects.filter(username__in=comment.mentions))
        people = [u for u in people if u.pk != comment.author_id]
        if not people:
            return
        emit_event(
            kinds.MENTION,
            session=comment.session,
            actor=comment.author,
            data={
                "commentId": comment.pk,
                "entryId": comment.entry_id,
                "mentioned": [u.get_username() for u in people],
                "text": masked(comment.body),
            },
            users=people,
            key=f"mention:{comment.pk}",
        )
    except Exception:
        log.exception("the hooks of comment %s were not written", comment_id)


def run_closed(sender: Any, *, run: AgentRun, **kwargs: Any) -> None:
    """A run ended: ``run.failed`` when it failed, else ``run.ended``; to whom asked for it and the
    session's owner."""
    failed = run.status == AgentRun.Status.FAILED
    try:
        with transaction.atomic():
            session = ChatSession.objects.filter(pk=run.session_id).first()
            if session is None:
                return
            emit_event(
                kinds.RUN_FAILED if failed else kinds.RUN_ENDED,
                session=session,
                actor=run.requested_by,
                data={
                    "runId": str(run.public_id),
                    "status": str(run.status),
                    "stopReason": run.stop_reason or None,
                    "error": masked(run.error) if run.error else None,
                },
                users=[run.requested_by_id, session.owner_id],
                key=f"run:{run.pk}",
            )
    except Exception:
        log.exception("the hooks of run %s were not written", run.pk)


def secrets_found(sender: Any, *, session_id: int, count: int, where: str, **kwargs: Any) -> None:
    """The secret scan found secrets: the session's owner hears how many (never where or what)."""
    try:
        session = ChatSession.objects.filter(pk=session_id).first()
        if session is None or count <= 0:
            return
        emit_event(
            kinds.SECRET_FOUND,
            session=session,
            actor=None,
            data={"count": count},
            users=[session.owner_id],
            key=f"secret:{where}",
        )
    except Exception:
        log.exception("the hooks of the secrets found in session %s were not written", session_id)


def session_shared(
    sender: Any, *, session: ChatSession, team: Any, actor: Any, access: str, **kwargs: Any
) -> None:
    """A session newly shared with a team: that team's hooks hear of it."""
    try:
        emit_event(kinds.SESSION_SHARED, session=session, actor=actor, data={"access": access}, team=team)
    except Exception:
        log.exception("the hooks of sharing session %s were not written", session.pk)


def review_requested(sender: Any, *, review: Review, actor: Any, **kwargs: Any) -> None:
    """A review asked for (or asked again): its team's hooks and the reviewers' own hooks hear of it."""
    try:
        reviewers = list(review.reviewers.select_related("user"))
        emit_event(
            kinds.REVIEW_REQUESTED,
            session=review.session,
            actor=actor,
            data={
                "reviewId": review.pk,
                "entryId": review.entry_id,
                "reviewers": [r.user.get_username() for r in reviewers],
                "note": masked(review.note),
            },
            team=review.team,
            users=[r.user_id for r in reviewers],
            key=f"review:{review.pk}:requested:{review.requested_at.isoformat()}",
        )
    except Exception:
        log.exception("the hooks of review %s were not written", review.pk)


def review_decided(sender: Any, *, review: Review, reviewer: Reviewer, actor: Any, **kwargs: Any) -> None:
    """A reviewer approved or asked for changes: the team's hooks and the requester's own hear of it."""
    when = reviewer.decided_at.isoformat() if reviewer.decided_at else ""
    try:
        emit_event(
            kinds.REVIEW_DECIDED,
            session=review.session,
            actor=actor,
            data={
                "reviewId": review.pk,
                "entryId": review.entry_id,
                "reviewer": reviewer.user.get_username(),
                "decision": reviewer.decision,
                "status": review.status,
                "note": masked(reviewer.note),
            },
            team=review.team,
            users=[review.requester_id] if review.requester_id else [],
            key=f"review:{review.pk}:decided:{reviewer.pk}:{when}",
        )
    except Exception:
        log.exception("the hooks of review %s were not written", review.pk)


discussion_signals.comment_written.connect(comment_written, dispatch_uid="hooks-mention")
review_signals.review_requested.connect(review_requested, dispatch_uid="hooks-review-requested")
review_signals.review_decided.connect(review_decided, dispatch_uid="hooks-review-decided")
agent_signals.run_closed.connect(run_closed, dispatch_uid="hooks-run-closed")
governance_signals.secrets_found.connect(secrets_found, dispatch_uid="hooks-secrets-found")
session_signals.session_shared.connect(session_shared, dispatch_uid="hooks-session-shared")
