"""Outgoing webhooks: a hook (a team's or one person's) and its delivery log.

A delivery row is written with the event, in the transaction of the write that caused it, and leaves
after commit; its row keeps every attempt's outcome, so nothing is lost when a receiver or a worker is
away (``hooks.delivery``).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from core.secret_box import EncryptedTextField
from sessions_app.models import ChatSession
from teams.models import Team


class Hook(models.Model):
    """Where to send which events: owned by a team (its owners manage it) or by one person."""

    class Format(models.TextChoices):
        JSON = "json", "JSON (signed)"
        SLACK = "slack", "Slack incoming webhook"

    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    name = models.CharField(max_length=100)
    url = models.TextField()
    secret = EncryptedTextField(help_text="Signs each delivery; shown once, at creation and rotation")
    events = models.JSONField(default=list)
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.JSON)
    active = models.BooleanField(default=True, help_text="A paused hook gets no new deliveries")
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by the first failure after a success and cleared by the next success: the page warns while a
    # hook keeps failing, and nothing pauses it behind its owners' backs.
    failing_since = models.DateTimeField(null=True, blank=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(team__isnull=True) ^ models.Q(owner__isnull=True), name="hook_one_owner"
            )
        ]
        indexes = [
            models.Index(fields=["team"], name="hook_team_idx", condition=models.Q(team__isnull=False)),
            models.Index(fields=["owner"], name="hook_owner_idx", condition=models.Q(owner__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"hook {self.name} ({self.team or self.owner})"


class Delivery(models.Model):
    """One event sent (or to be sent) to one hook, with the outcome of its latest attempt."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # still failing when the retry window closed
        CANCELLED = "cancelled"  # its hook's owner may no longer read the session

    hook = models.ForeignKey(Hook, on_delete=models.CASCADE, related_name="deliveries")
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=40)
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # One event reaches a hook once however often its cause is announced (a comment edited twice).
    dedupe_key = models.CharField(max_length=200, blank=True, default="")
    replay_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Set while an attempt is under way (its claim), so waking the waiting ones never sends it twice.
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_response = models.TextField(blank=True, default="", help_text="The start of the receiver's answer")
    response_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["hook", "-created_at"], name="delivery_log_idx"),
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_due_idx",
                condition=models.Q(status="pending"),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["hook", "dedupe_key"], name="delivery_once", condition=~models.Q(dedupe_key="")
            )
        ]

    def __str__(self) -> str:
        return f"{self.event} to hook {self.hook_id} ({self.status})"
