"""Reviews of a session or of one branch (a node and the path to it), and who is asked to review."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from reviews.domain import status as rules
from sessions_app.models import ChatSession
from teams.models import Team


class Review(models.Model):
    """A request that named teammates review a session (``entry_id`` None) or the branch ending at
    ``entry_id``. ``status`` is kept at every write (``domain.status.overall``) so the session list
    filters and badges from this table alone."""

    class Status(models.TextChoices):
        PENDING = rules.PENDING
        APPROVED = rules.APPROVED
        CHANGES = rules.CHANGES, "changes requested"
        OUTDATED = rules.OUTDATED
        WITHDRAWN = rules.WITHDRAWN

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    entry_id = models.CharField(max_length=255, null=True, blank=True, help_text="None: the whole session")
    # Where the reviewed node lies, so a new entry's path is checked against it without reading entries.
    entry_seq = models.IntegerField(null=True, blank=True)
    entry_depth = models.IntegerField(null=True, blank=True)
    seq = models.IntegerField(help_text="The session's next sequence when review was (re-)requested")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requester_name = models.CharField(max_length=150, help_text="Kept when the user is deleted")
    note = models.TextField(blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    requested_at = models.DateTimeField(help_text="The latest request (a re-request moves it)")
    outdated_at = models.DateTimeField(null=True, blank=True)
    outdated_by = models.CharField(max_length=255, blank=True, default="", help_text="The new entry's id")
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The list's filter and badges: a session's reviews by status.
            models.Index(fields=["session", "status"], name="review_session_idx"),
            # A team's queue, newest first.
            models.Index(fields=["team", "status", "-requested_at"], name="review_team_idx"),
            models.Index(fields=["requester", "status"], name="review_requester_idx"),
        ]

    def __str__(self) -> str:
        what = f"branch {self.entry_id}" if self.entry_id else "session"
        return f"review of {what} of {self.session_id} ({self.status})"


class Reviewer(models.Model):
    """One person asked to review, and their decision."""

    class Decision(models.TextChoices):
        PENDING = rules.PENDING
        APPROVED = rules.APPROVED
        CHANGES = rules.CHANGES, "changes requested"

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="reviewers")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    decision = models.CharField(max_length=10, choices=Decision.choices, default=Decision.PENDING)
    note = models.TextField(blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["review", "user"], name="one_reviewer_per_review")]
        # "Waiting for me": my undecided requests.
        indexes = [models.Index(fields=["user", "decision"], name="reviewer_user_idx")]

    def __str__(self) -> str:
        return f"reviewer {self.user_id} of review {self.review_id}: {self.decision}"
