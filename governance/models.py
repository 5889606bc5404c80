"""Secrets found in stored entries, retention rules and holds, and the log of share-link opens."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from discussion.facade import Comment
from sessions_app.models import ChatSession, ShareLink
from teams.models import Team


class SecretFinding(models.Model):
    """A secret in one stored entry or one comment: where it is and what kind, never the secret itself.

    An entry's finding has the entry's ``seq`` and a JSON pointer into its line; a comment's has the
    comment, no ``seq``, the entry the comment is on, and the path ``/body``.
    """

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    seq = models.IntegerField(null=True, blank=True, help_text="The entry's append order in its session")
    comment = models.ForeignKey(Comment, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    entry_id = models.TextField(null=True, blank=True)
    kind = models.CharField(max_length=64, help_text='The detector\'s kind, e.g. "aws-access-key"')
    path = models.TextField(help_text="JSON pointer to the string in the entry that holds it")
    start = models.IntegerField(help_text="First character of the secret in that string")
    end = models.IntegerField(help_text="Character after the secret")
    found_at = models.DateTimeField(auto_now_add=True)
    redacted_at = models.DateTimeField(null=True, blank=True)
    redacted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "seq", "path", "start", "kind"], name="unique_secret_finding"
            ),
            models.UniqueConstraint(
                fields=["comment", "start", "kind"],
                condition=models.Q(comment__isnull=False),
                name="unique_comment_secret_finding",
            ),
        ]
        indexes = [
            models.Index(
                fields=["session", "seq"],
                condition=models.Q(redacted_at__isnull=True),
                name="finding_open_idx",
            )
        ]

    def __str__(self) -> str:
        where = f"comment {self.comment_id}" if self.comment_id else f"entry {self.entry_id or self.seq}"
        return f"{self.kind} in {where} of session {self.session_id}"


class PendingScan(models.Model):
    """Entries stored by a bulk write and queued for a worker's scan; the row goes when the scan is done."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    first_seq = models.IntegerField()
    last_seq = models.IntegerField()
    queued_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"session {self.session_id} entries {self.first_seq}-{self.last_seq}"


class TeamPolicy(models.Model):
    """A team's rules: how long its sessions live untouched, and whether those with secrets may be shared."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="policy")
    retention_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Delete sessions shared with the team untouched this many days"
    )
    block_sharing_with_findings = models.BooleanField(
        default=False,
        help_text="Members may not share sessions (with a team or by link) holding unredacted secrets",
    )

    class Meta:
        verbose_name_plural = "team policies"

    def __str__(self) -> str:
        return f"policy of {self.team}"


class UserRetention(models.Model):
    """A user's own retention: their sessions untouched this many days are deleted."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    retention_days = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.user}: {self.retention_days} days"


class LegalHold(models.Model):
    """A session no retention rule may delete while the hold stands."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, related_name="legal_hold")
    reason = models.TextField(blank=True, default="")
    placed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    placed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"hold on {self.session}"


class LinkView(models.Model):
    """Opens of a share link by one viewer (a user, or anonymous) within one day, coalesced into a row."""

    link = models.ForeignKey(ShareLink, on_delete=models.CASCADE, related_name="+")
    viewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # The viewer's id, 0 for anonymous: a unique key every database enforces (NULLs are all distinct).
    viewer_key = models.BigIntegerField(default=0)
    day = models.DateField()
    count = models.PositiveIntegerField(default=1)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["link", "viewer_key", "day"], name="unique_link_view_day")
        ]

    def __str__(self) -> str:
        return f"{self.link_id} opened {self.count}× by {self.viewer or 'anonymous'} on {self.day}"
