"""Comments anchored to entries, the inbox they feed, and who wants what by email.

Comments live in piweb's own tables, never in the session's entries, so an export stays byte-exact.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.models import ChatSession
from teams.models import Team


class Comment(models.Model):
    """One comment on one entry. A thread is a root (``parent`` is None) and its replies.

    Only a root is resolved or reopened. A deleted comment stays as a tombstone (``deleted_at`` set,
    its text kept for admins) so the thread around it still reads in order.
    """

    # Indexed by comment_entry_idx, which starts with the session.
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    entry_id = models.CharField(max_length=255)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150, help_text="Kept when the user is deleted")
    body = models.TextField()
    # Rendered once when written (the message sanitizer is not cheap), not on every read of a thread.
    html = models.TextField(blank=True, default="", help_text="The body rendered and sanitized")
    mentions = models.JSONField(default=list, blank=True, help_text="Usernames mentioned, as resolved")
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by = models.CharField(max_length=150, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        indexes = [
            # Counts per visible node and the threads of one node.
            models.Index(fields=["session", "entry_id"], name="comment_entry_idx"),
            models.Index(fields=["parent", "created_at"], name="comment_reply_idx"),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} by {self.author_name} on {self.entry_id}"

    @property
    def root_id(self) -> int:
        return self.parent_id or self.pk


class CommentRevision(models.Model):
    """A comment's text before an edit, kept so a frozen link shows the text of its moment."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="revisions")
    body = models.TextField()
    html = models.TextField(blank=True, default="")
    mentions = models.JSONField(default=list, blank=True)
    replaced_at = models.DateTimeField(help_text="When an edit replaced this text")

    class Meta:
        indexes = [models.Index(fields=["comment", "replaced_at"], name="comment_revision_idx")]

    def __str__(self) -> str:
        return f"comment {self.comment_id} before {self.replaced_at:%Y-%m-%d %H:%M:%S}"


class Notification(models.Model):
    """One line of a user's inbox: a comment that mentions them or answers a thread they are in, or a
    line another app writes through ``services.notify`` (a review asked of them or decided), which has
    no comment and carries its own text."""

    class Kind(models.TextChoices):
        MENTION = "mention"
        REPLY = "reply"
        REVIEW = "review"

    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    comment = models.ForeignKey(
        Comment, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # A line without a comment says what happened itself, by whom, and where it points (an entry or none).
    author_name = models.CharField(max_length=150, null=True, blank=True)
    text = models.TextField(null=True, blank=True)
    entry_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    # Email is batched per recipient: a line waiting for its email has a due time, and every line due for
    # one recipient leaves in one message (``discussion.emails``).
    email_due_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["recipient", "read_at", "-created_at"], name="inbox_idx"),
            models.Index(
                fields=["email_due_at"], condition=models.Q(email_due_at__isnull=False), name="email_due_idx"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["recipient", "comment"], name="one_notification_per_comment")
        ]


class EmailChoice(models.TextChoices):
    ALL = "all", "every notification"
    MENTIONS = "mentions", "mentions only"
    NONE = "none", "no email"


class NotificationPreference(models.Model):
    """What a user wants by email; without a row, mentions only."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    email = models.CharField(max_length=10, choices=EmailChoice.choices, default=EmailChoice.MENTIONS)


class TeamDiscussion(models.Model):
    """A team's discussion rule; without a row, its viewers may comment."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="discussion")
    viewers_may_comment = models.BooleanField(
        default=True,
        help_text="Team viewers may comment on sessions shared with the team (editors always may)",
    )
