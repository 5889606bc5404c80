"""Background work of discussions: the notification emails, queued after the comment commits."""

from __future__ import annotations

from celery import shared_task

from discussion import emails


@shared_task(
    name="discussion.send_notification_emails",
    autoretry_for=(OSError,),
    retry_backoff=True,
    max_retries=5,
)
def send_notification_emails(notification_ids: list[int]) -> int:
    """Send the emails of these inbox lines (a retry skips lines read or deleted meanwhile)."""
    return emails.send_notification_emails(notification_ids)
