"""Notification emails through Django's email framework (SMTP settings: README, Configuration).

Email is batched per recipient: a person gets at most one message per ``PIWEB_MAIL_BATCH_SECONDS``. The
first line after a quiet spell is due at once; lines arriving while a batch waits join it and leave
together, one message listing every comment. A line read or deleted before its batch leaves is not
sent. The due time lives on the inbox line, so a lost task costs only a delay: the minute's sweep sends
whatever is overdue.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from discussion.domain.text import snippet
from discussion.models import Notification
from discussion.secrets import masked_body

log = logging.getLogger(__name__)

__all__ = ["mark_due", "send_due_emails", "send_notification_emails"]

# A task that runs a little early (clocks, countdown rounding) still sends its batch.
EARLY = timedelta(seconds=1)


def mark_due(notes: Iterable[Notification]) -> dict[int, datetime]:
    """Give each inbox line its email's due time (in the caller's transaction); return the recipients
    whose batch needs a task, with its due time."""
    now = timezone.now()
    window = timedelta(seconds=max(0, settings.PIWEB_MAIL_BATCH_SECONDS))
    by_recipient: dict[int, list[int]] = {}
    for note in notes:
        by_recipient.setdefault(note.recipient_id, []).append(note.pk)
    needs_task: dict[int, datetime] = {}
    for recipient_id, ids in by_recipient.items():
        lines = Notification.objects.filter(recipient_id=recipient_id)
        waiting = lines.filter(emailed_at__isnull=True, email_due_at__isnull=False).exclude(pk__in=ids)
        due = waiting.filter(email_due_at__gt=now).aggregate(due=Min("email_due_at"))["due"]
        if due is None:
            if waiting.exists():
                # A batch is leaving now and its task may have taken its lines already: these start the
                # next batch, one window on, rather than leave alone right after it.
                due = now + window
            else:
                last = lines.aggregate(last=Max("emailed_at"))["last"]
                due = max(now, last + window) if last is not None else now
            needs_task[recipient_id] = due
        Notification.objects.filter(pk__in=ids).update(email_due_at=due)
    return needs_task


def send_due_emails(recipient_id: int | None = None) -> int:
    """Send the batches that are due: one recipient's, or everyone's (the sweep). Return messages sent."""
    if recipient_id is not None:
        return _send_batch(recipient_id)
    overdue = (
        Notification.objects.filter(emailed_at__isnull=True, email_due_at__lte=timezone.now() + EARLY)
        .values_list("recipient_id", flat=True)
        .distinct()
    )
    return sum(_send_batch(pk) for pk in list(overdue))


def send_notification_emails(notification_ids: Sequence[int]) -> int:
    """Send these inbox lines' emails now (tasks queued by the previous release), batched per recipient."""
    lines = Notification.objects.filter(pk__in=list(notification_ids), emailed_at__isnull=True)
    recipients = set(lines.values_list("recipient_id", flat=True))
    lines.update(email_due_at=timezone.now())
    return sum(_send_batch(pk) for pk in recipients)


def _send_batch(recipient_id: int) -> int:
    with transaction.atomic():
        # Two tasks for one recipient never send one line twice: the second skips the locked lines.
        due = list(
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("recipient", "comment", "session")
            .filter(
                recipient_id=recipient_id,
                emailed_at__isnull=True,
                email_due_at__lte=timezone.now() + EARLY,
            )
            .order_by("created_at", "pk")
        )
        if not due:
            return 0
        sendable = [
            n
            for n in due
            if n.read_at is None
            and (n.comment is None or n.comment.deleted_at is None)
            and n.recipient.is_active
            and n.recipient.email
        ]
        now = timezone.now()
        Notification.objects.filter(pk__in=[n.pk for n in due]).update(email_due_at=None)
        Notification.objects.filter(pk__in=[n.pk for n in sendable]).update(emailed_at=now)
        if not sendable:
            return 0
        # Sent inside the transaction: a mail server that refuses rolls the marks back, and the task retries.
        return mailers.default.send_messages([_message(sendable)]) or 0


def _author(note: Notification) -> str:
    return note.comment.author_name if note.comment is not None else (note.author_name or "")


def _verb(note: Notification) -> str:
    if note.comment is None:
        return note.text or "wrote to you"
    return "mentioned you" if note.kind == Notification.Kind.MENTION else "replied in a thread you are in"


def _link(note: Notification) -> str:
    entry = note.comment.entry_id if note.comment is not None else note.entry_id
    anchor = f"#entry={entry}" if entry else ""
    return f"{settings.PIWEB_BASE_URL.rstrip('/')}/sessions/{note.session_id}/{anchor}"


def _title(note: Notification) -> str:
    return note.session.title


def _quoted(note: Notification) -> str:
    if note.comment is None:
        return ""
    # A body with secrets nobody has redacted yet never leaves verbatim: email cannot be taken back.
    return snippet(masked_body(note.comment), 2000)


def _said(note: Notification) -> str:
    """A line's own words: what happened and the text quoted, if any."""
    quoted = _quoted(note)
    return f"{_author(note)} {_verb(note)} on “{_title(note)}”" + (f":\n\n{quoted}" if quoted else ".")


def _message(notes: list[Notification]) -> EmailMessage:
    footer = "You get these emails because of your notification choice in piweb (Inbox → Email)."
    to = [notes[0].recipient.email]
    if len(notes) == 1:
        note = notes[0]
        author, verb, title = _author(note), _verb(note), _title(note)
        return EmailMessage(
            subject=f"[piweb] {author} {verb} on “{snippet(title, 60)}”",
            body=f"{_said(note)}\n\nOpen it: {_link(note)}\n\n{footer}",
            to=to,
        )
    parts = [f"{_said(note)}\n\nOpen it: {_link(note)}" for note in notes]
    sessions = {note.session_id for note in notes}
    where = f"on “{snippet(_title(notes[0]), 60)}”" if len(sessions) == 1 else f"on {len(sessions)} sessions"
    what = "comments" if all(n.comment is not None for n in notes) else "notifications"
    return EmailMessage(
        subject=f"[piweb] {len(notes)} new {what} for you {where}",
        body="\n\n———\n\n".join(parts) + f"\n\n{footer}",
        to=to,
    )
