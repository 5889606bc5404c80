"""Discussion write use cases: post, edit, delete, resolve and reopen a comment; read the inbox.

Each validates, authorizes, writes with its action-log row in one transaction, and announces after
commit (the session's sockets, the recipients' inboxes, then the emails, queued).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from actionlog.facade import record_action
from core import rate_limit
from core.actors import Actor, actor_name, user_of
from core.errors import NotVisible
from core.staff import authorize_staff
from core.tasks import enqueue
from discussion import emails, live, rules, signals
from discussion.domain.text import InvalidComment, check_body, mentioned_names
from discussion.models import (
    Comment,
    CommentRevision,
    EmailChoice,
    Notification,
    NotificationPreference,
    TeamDiscussion,
)
from discussion.queries import unread_count
from discussion.verbs import Action
from documents import rendering
from documents.secrets import masked
from pitree.storable import MAX_ID_CHARS
from sessions_app.facade import ChatSession, EntryNotFound, access
from sessions_app.facade import verbs as session_verbs
from teams.facade import Team

__all__ = [
    "CommentNotFound",
    "delete_comment",
    "edit_comment",
    "export_comments",
    "mark_read",
    "notify",
    "post_comment",
    "reopen_thread",
    "resolve_thread",
    "rewrite_comment",
    "set_email_choice",
    "set_viewers_may_comment",
    "viewers_may_comment",
]

log = logging.getLogger(__name__)


class CommentNotFound(EntryNotFound):
    """No comment with that id that this caller may see (answered 404 like a missing entry)."""


@dataclass(frozen=True, slots=True)
class _Found:
    comment: Comment
    grant: access.Access


def post_comment(
    *,
    actor: Actor,
    session: ChatSession,
    entry_id: object,
    body: object,
    parent_id: int | None = None,
    grant: access.Access | None = None,
) -> Comment:
    """Comment on an entry (or reply in a thread); notify whom it mentions and the thread's people."""
    text = check_body(body)
    if not isinstance(entry_id, str) or not entry_id:
        raise InvalidComment("entryId must name an entry.", field="entryId")
    if len(entry_id) > MAX_ID_CHARS:
        raise InvalidComment(f"entryId is longer than {MAX_ID_CHARS} characters.", field="entryId")
    grant = rules.require_commenter(actor, session, grant)
    grant.entry(entry_id)  # 404 for an entry that does not exist or lies outside the grant
    root: Comment | None = None
    if parent_id is not None:
        parent = Comment.objects.filter(pk=parent_id, session=session).first()
        if parent is None:
            raise CommentNotFound(f"Comment {parent_id} not found in this session")
        root = parent if parent.parent_id is None else parent.parent
        assert root is not None
        if root.entry_id != entry_id:
            raise InvalidComment(
                f"Comment {parent_id} is on entry {root.entry_id}, not {entry_id}.", field="parentId"
            )
    mentioned = _mentionable(session, text)
    author = user_of(actor)
    _count_write(actor)
    with transaction.atomic():
        comment = Comment.objects.create(
            session=session,
            entry_id=entry_id,
            parent=root,
            author=author,
            author_name=actor_name(actor)[:150],
            body=text,
            html=rendering.render_markdown(text),
            mentions=[u.get_username() for u in mentioned],
        )
        people = _thread_people(root, session) if root is not None else []
        recipients = _notify(comment, mentioned, people, author)
        record_action(
            actor=actor,
            action=Action.COMMENT_CREATE,
            session=session,
            comment=comment.pk,
            entry=entry_id,
            thread=comment.root_id,
            mentions=comment.mentions,
        )
        _after_commit(comment, "created", recipients)
    return comment


def edit_comment(*, actor: Actor, comment_id: int, body: object) -> Comment:
    """Change the text of one's own comment; people it newly mentions are notified."""
    text = check_body(body)
    found = _find(actor, comment_id)
    comment = found.comment
    if comment.author_id is None or comment.author_id != getattr(user_of(actor), "pk", None):
        raise access.Forbidden("Only its author may edit a comment.")
    if comment.deleted_at is not None:
        raise InvalidComment("This comment was deleted; it cannot be edited.")
    # Editing is writing: one who may no longer comment keeps her comments as they are (she may delete them).
    rules.require_commenter(actor, comment.session, found.grant)
    mentioned = _mentionable(comment.session, text)
    _count_write(actor)
    with transaction.atomic():
        comment = Comment.objects.select_for_update().get(pk=comment.pk)
        before = set(comment.mentions)
        now = timezone.now()
        CommentRevision.objects.create(
            comment=comment, body=comment.body, html=comment.html, mentions=comment.mentions, replaced_at=now
        )
        comment.body = text
        comment.html = rendering.render_markdown(text)
        comment.mentions = [u.get_username() for u in mentioned]
        comment.edited_at = now
        comment.save(update_fields=["body", "html", "mentions", "edited_at"])
        new = [u for u in mentioned if u.get_username() not in before]
        recipients = _notify(comment, new, [], user_of(actor))
        record_action(
            actor=actor,
            action=Action.COMMENT_EDIT,
            session=comment.session,
            comment=comment.pk,
            entry=comment.entry_id,
            thread=comment.root_id,
            mentions=comment.mentions,
        )
        _after_commit(comment, "edited", recipients)
    return comment


def delete_comment(*, actor: Actor, comment_id: int) -> Comment:
    """Delete one's own comment: a tombstone keeps its place (and its text, for admins)."""
    found = _find(actor, comment_id)
    comment = found.comment
    if comment.author_id is None or comment.author_id != getattr(user_of(actor), "pk", None):
        raise access.Forbidden("Only its author may delete a comment.")
    if comment.deleted_at is not None:
        raise CommentNotFound(f"Comment {comment_id} not found")
    with transaction.atomic():
        comment = Comment.objects.select_for_update().get(pk=comment.pk)
        comment.deleted_at = timezone.now()
        comment.deleted_by = actor_name(actor)[:150]
        comment.save(update_fields=["deleted_at", "deleted_by"])
        # Its inbox lines would point at nothing: they go, and their readers' counts follow.
        notified = list(Notification.objects.filter(comment=comment).values_list("recipient_id", flat=True))
        Notification.objects.filter(comment=comment).delete()
        record_action(
            actor=actor,
            action=Action.COMMENT_DELETE,
            session=comment.session,
            comment=comment.pk,
            entry=comment.entry_id,
            thread=comment.root_id,
        )
        transaction.on_commit(partial(_announce, comment, "deleted", notified, {}))
    return comment


def rewrite_comment(comment_id: int, body: str) -> None:
    """Replace a comment's stored text (a redaction: the caller authorized and logs it, in its
    transaction); its earlier texts lose every secret the detectors see. Not an edit: no revision, no
    notification, and the comment keeps its edit time."""
    comment = Comment.objects.filter(pk=comment_id).first()
    if comment is None:
        return
    Comment.objects.filter(pk=comment_id).update(body=body, html=rendering.render_markdown(body))
    transaction.on_commit(partial(_announce, comment, "redacted", [], {}))
    for revision in CommentRevision.objects.filter(comment_id=comment_id):
        cleaned = masked(revision.body)
        if cleaned != revision.body:
            CommentRevision.objects.filter(pk=revision.pk).update(
                body=cleaned, html=rendering.render_markdown(cleaned)
            )


def resolve_thread(*, actor: Actor, comment_id: int) -> Comment:
    """Mark the thread holding ``comment_id`` resolved (already resolved: unchanged); any signed-in reader
    may."""
    return _set_resolved(actor, comment_id, resolved=True)


def reopen_thread(*, actor: Actor, comment_id: int) -> Comment:
    """Open a resolved thread again; any signed-in reader may."""
    return _set_resolved(actor, comment_id, resolved=False)


def _set_resolved(actor: Actor, comment_id: int, *, resolved: bool) -> Comment:
    found = _find(actor, comment_id)
    root_id = found.comment.root_id
    with transaction.atomic():
        root = Comment.objects.select_for_update().get(pk=root_id)
        if (root.resolved_at is not None) == resolved:
            # Already so (two people resolving at once): nothing to write, both are answered alike.
            return root
        root.resolved_at = timezone.now() if resolved else None
        root.resolved_by = actor_name(actor)[:150] if resolved else ""
        root.save(update_fields=["resolved_at", "resolved_by"])
        record_action(
            actor=actor,
            action=Action.COMMENT_RESOLVE if resolved else Action.COMMENT_REOPEN,
            session=found.grant.session,
            comment=root.pk,
            entry=root.entry_id,
            thread=root.pk,
        )
        transaction.on_commit(partial(_announce, root, "resolved" if resolved else "reopened", [], {}))
    return root


def mark_read(*, actor: Actor, ids: Iterable[int] | None) -> int:
    """Mark inbox lines read (all of them when ``ids`` is None); return the unread count left."""
    user = user_of(actor)
    if user is None:
        raise access.NotSignedIn()
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)  # hidden lines too
    if ids is not None:
        unread = unread.filter(pk__in=list(ids))
    with transaction.atomic():
        unread.update(read_at=timezone.now())
        transaction.on_commit(partial(live.announce_inbox, [user.pk]))
    return unread_count(user.pk)


def set_email_choice(*, actor: Actor, choice: str) -> str:
    """Choose which notifications reach the user by email: all, mentions only, or none."""
    user = user_of(actor)
    if user is None:
        raise access.NotSignedIn()
    if choice not in EmailChoice.values:
        raise InvalidComment(f"email must be one of {', '.join(EmailChoice.values)}.", field="email")
    NotificationPreference.objects.update_or_create(user=user, defaults={"email": choice})
    return choice


def _find(actor: Actor, comment_id: int) -> _Found:
    """Return a comment the actor may see as a signed-in reader; anything else is "not found"."""
    comment = Comment.objects.select_related("session").filter(pk=comment_id).first()
    if comment is None or comment.session.deleted_at is not None:
        raise CommentNotFound(f"Comment {comment_id} not found")
    try:
        grant = rules.require_reader(actor, comment.session)
    except access.NotVisible as exc:
        raise CommentNotFound(f"Comment {comment_id} not found") from exc
    return _Found(comment, grant)


def _mentionable(session: ChatSession, text: str) -> list:
    """Return the accounts ``text`` mentions; refuse the whole comment if one of them cannot read it."""
    names = mentioned_names(text)
    if not names:
        return []
    found = {u.get_username(): u for u in rules.readers(session).filter(username__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        listed = ", ".join(f"@{n}" for n in missing)
        raise InvalidComment(
            f"Cannot mention {listed}: nobody by that name can read this session. "
            "Share the session with them first, or remove the mention."
        )
    return [found[n] for n in names]


def _thread_people(root: Comment, session: ChatSession) -> list:
    """Return the readers who wrote in the thread (its root and replies)."""
    authors = (
        Comment.objects.filter(pk=root.pk)
        .values("author_id")
        .union(Comment.objects.filter(parent=root).values("author_id"))
    )
    ids = {row["author_id"] for row in authors if row["author_id"] is not None}
    return list(rules.readers(session).filter(pk__in=ids))


def _notify(comment: Comment, mentioned: list, people: list, author: object) -> dict[int, str]:
    """Write the inbox lines of a comment; return ``{recipient id: kind}``. Authors hear nothing of
    their own comments, and a mention wins over a reply."""
    author_pk = getattr(author, "pk", None)
    kinds: dict[int, str] = {}
    for user in people:
        kinds[user.pk] = Notification.Kind.REPLY
    for user in mentioned:
        kinds[user.pk] = Notification.Kind.MENTION
    kinds.pop(author_pk, None)  # type: ignore[arg-type]
    existing = set(
        Notification.objects.filter(comment=comment, recipient_id__in=kinds).values_list(
            "recipient_id", flat=True
        )
    )
    fresh = {uid: kind for uid, kind in kinds.items() if uid not in existing}
    Notification.objects.bulk_create(
        [
            Notification(recipient_id=uid, comment=comment, session_id=comment.session_id, kind=kind)
            for uid, kind in fresh.items()
        ]
    )
    return fresh


def notify(
    *,
    recipients: Iterable[int],
    session: ChatSession,
    author_name: str,
    text: str,
    entry_id: str | None = None,
    kind: str = Notification.Kind.REVIEW,
) -> list[int]:
    """Write an inbox line that is not a comment (a review asked of someone, or decided) for each
    recipient, in the caller's transaction; after commit their inboxes hear of it and the emails their
    choice asks for are queued. Such a line is addressed to its reader, so it mails as a mention does.
    Return the recipients' ids."""
    ids = sorted(set(recipients))
    if not ids:
        return []
    notes = Notification.objects.bulk_create(
        [
            Notification(
                recipient_id=uid,
                session=session,
                kind=kind,
                author_name=author_name[:150],
                text=text,
                entry_id=entry_id,
            )
            for uid in ids
        ]
    )
    batches = emails.mark_due([n for n in notes if _wants_email(n.recipient_id, n.kind)])
    transaction.on_commit(partial(_announce_inbox, ids, batches))
    return ids


def _count_write(actor: Actor) -> None:
    """Count one comment written (posted or edited) against the writer's rate; refuse past it."""
    user = user_of(actor)
    if user is not None:
        rate_limit.take("comment", user.pk, settings.PIWEB_COMMENT_RATE, what="comments")


def _after_commit(comment: Comment, change: str, recipients: dict[int, str]) -> None:
    wanted = [
        n
        for n in Notification.objects.filter(comment=comment, recipient_id__in=list(recipients))
        if _wants_email(n.recipient_id, n.kind)
    ]
    batches = emails.mark_due(wanted)
    transaction.on_commit(partial(_announce, comment, change, list(recipients), batches))
    transaction.on_commit(partial(signals.comment_written.send, sender=Comment, comment_id=comment.pk))


def _wants_email(user_id: int, kind: str) -> bool:
    choice = (
        NotificationPreference.objects.filter(user_id=user_id).values_list("email", flat=True).first()
        or EmailChoice.MENTIONS
    )
    addressed = kind in (Notification.Kind.MENTION, Notification.Kind.REVIEW)
    return choice == EmailChoice.ALL or (choice == EmailChoice.MENTIONS and addressed)


def _announce(comment: Comment, change: str, inbox: list[int], batches: dict[int, datetime]) -> None:
    live.announce_comment(
        session_id=comment.session_id,
        entry_id=comment.entry_id,
        thread_id=comment.root_id,
        comment_id=comment.pk,
        change=change,
    )
    _announce_inbox(inbox, batches)


def _announce_inbox(inbox: list[int], batches: dict[int, datetime]) -> None:
    if inbox:
        live.announce_inbox(inbox)
    now = timezone.now()
    for recipient_id, due in batches.items():
        try:
            enqueue("discussion.send_due_emails", recipient_id, countdown=(due - now).total_seconds())
        except Exception:
            # The line is stored and the inbox has it: a broker outage (or, with tasks run inline, an
            # unreachable mail server) only delays the email until the sweep finds it due.
            log.warning("the notification email of user %s was not queued", recipient_id, exc_info=True)


def export_comments(*, actor: Actor, grant: access.Access) -> list[dict[str, object]]:
    """Return every thread the viewer may see, for download; the export is logged like a session's."""
    from discussion.queries import export_threads

    threads = export_threads(grant)
    with transaction.atomic():
        record_action(actor=actor, action=session_verbs.Action.EXPORT, session=grant.session, comments=True)
    return threads


def set_viewers_may_comment(*, actor: Actor, team_id: int, allowed: bool, as_staff: bool = False) -> bool:
    """Let a team's viewers comment on the sessions shared with it, or not; only its owners may.

    ``as_staff``: a staff member sets it from the admin, for any team; the row says ``by_staff``.
    """
    if as_staff:
        authorize_staff(actor, "discussion.change_teamdiscussion")
        found = Team.objects.filter(pk=team_id).first()
        if found is None:
            raise NotVisible(f"Team not found: {team_id}")
        team = found
    else:
        team = access.team_of(user_of(actor), team_id, owner=True)
    staff = {"by_staff": True} if as_staff else {}
    with transaction.atomic():
        TeamDiscussion.objects.update_or_create(team=team, defaults={"viewers_may_comment": allowed})
        record_action(
            actor=actor,
            action=session_verbs.Action.SETTINGS,
            session=None,
            team=team,
            viewersMayComment=allowed,
            **staff,
        )
    return allowed


def viewers_may_comment(*, actor: Actor, team_id: int) -> tuple[bool, bool]:
    """Return whether the team's viewers may comment, and whether the actor may change it (members only)."""
    user = user_of(actor)
    team = access.team_of(user, team_id, owner=False)
    allowed = TeamDiscussion.objects.filter(team=team).values_list("viewers_may_comment", flat=True).first()
    return (True if allowed is None else allowed), access.team_role(user, team) == "owner"
