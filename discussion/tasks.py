"""Background work of discussions: the notification emails, batched per recipient (``discussion.emails``)."""

from __future__ import annotations

from core.tasks import task
from discussion import emails


@task("discussion.send_due_emails", retry_on=(OSError,))
def send_due_emails(recipient_id: int | None = None) -> int:
    """Send one recipient's due batch, or (without one: the minute's sweep) every overdue batch."""
    return emails.send_due_emails(recipient_id)


@task("discussion.send_notification_emails", retry_on=(OSError,))
def send_notification_emails(notification_ids: list[int]) -> int:
    """Send these inbox lines' emails now; tasks the previous release queued still arrive here."""
    return emails.send_notification_emails(notification_ids)
