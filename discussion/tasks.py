"""Background work of discussions: the notification emails, queued after the comment commits."""

from __future__ import annotations

from core.tasks import task
from discussion import emails


@task("discussion.send_notification_emails", retry_on=(OSError,))
def send_notification_emails(notification_ids: list[int]) -> int:
    """Send the emails of these inbox lines (a retry skips lines read or deleted meanwhile)."""
    return emails.send_notification_emails(notification_ids)
