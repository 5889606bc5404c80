"""Notification emails through Django's email framework (SMTP settings: README, Configuration)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.core.mail import EmailMessage, mailers

from discussion.domain.text import snippet
from discussion.models import Notification

log = logging.getLogger(__name__)

__all__ = ["send_notification_emails"]


def send_notification_emails(notification_ids: Sequence[int]) -> int:
    """Send one email per inbox line that still exists, is unread and has an address; return how many.

    Whether the recipient wants it was decided when the line was written (their email choice then).
    """
    rows = (
        Notification.objects.select_related("recipient", "comment", "session")
        .filter(pk__in=list(notification_ids), read_at__isnull=True, comment__deleted_at__isnull=True)
        .order_by("pk")
    )
    messages = [_message(n) for n in rows if n.recipient.email and n.recipient.is_active]
    if not messages:
        return 0
    return mailers.default.send_messages(messages) or 0


def _message(note: Notification) -> EmailMessage:
    comment, session = note.comment, note.session
    title = session.name or session.pi_id
    verb = "mentioned you" if note.kind == Notification.Kind.MENTION else "replied in a thread you are in"
    link = f"{settings.PIWEB_BASE_URL.rstrip('/')}/sessions/{session.pk}/#entry={comment.entry_id}"
    body = (
        f"{comment.author_name} {verb} on “{title}”:\n\n"
        f"{snippet(comment.body, 2000)}\n\n"
        f"Open it: {link}\n\n"
        "You get these emails because of your notification choice in piweb (Inbox → Email)."
    )
    return EmailMessage(
        subject=f"[piweb] {comment.author_name} {verb} on “{snippet(title, 60)}”",
        body=body,
        to=[note.recipient.email],
    )
