"""Summarizer providers and the history of compaction and branch-summary runs."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from sessions_app.models import ChatSession


class CompactionRunQuerySet(models.QuerySet["CompactionRun"]):
    def visible_to(self, user: Any) -> CompactionRunQuerySet:
        """Return the runs of sessions ``user`` may read."""
        return self.filter(session__in=ChatSession.objects.visible_to(user))

    def active(self) -> CompactionRunQuerySet:
        return self.filter(status__in=(CompactionRun.Status.QUEUED, CompactionRun.Status.RUNNING))


class CompactionRun(models.Model):
    """One requested compaction or branch summary: what was planned, what it cost and what it wrote.

    The row is the unit of idempotency: whatever delivers its task, at most one entry is ever written
    for it, because ``result_entry_id`` is set in the same transaction as the append.
    """

    class Kind(models.TextChoices):
        COMPACTION = "compaction"
        BRANCH_SUMMARY = "branch_summary"

    class Reason(models.TextChoices):
        MANUAL = "manual"
        THRESHOLD = "threshold"
        OVERFLOW = "overflow"
        NAVIGATE = "navigate"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        REFUSED = "refused"  # Pi refused it before any work ("Already compacted", a busy session)

    TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.REFUSED})

    operation_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    idempotency_key = models.CharField(max_length=255, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="compaction_runs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.CharField(max_length=20, choices=Reason.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    planned_leaf = models.TextField(null=True, blank=True, help_text="The leaf the run was planned for")
    target_id = models.TextField(null=True, blank=True, help_text="Navigation target (branch summaries)")
    label = models.TextField(null=True, blank=True)
    custom_instructions = models.TextField(null=True, blank=True)
    replace_instructions = models.BooleanField(default=False)
    will_retry = models.BooleanField(default=False)
    first_kept_entry_id = models.TextField(null=True, blank=True)
    tokens_before = models.BigIntegerField(null=True, blank=True)
    tokens_after = models.BigIntegerField(null=True, blank=True, help_text="Estimated, from the new context")
    summarizer = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    usage = models.JSONField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    result_entry_id = models.TextField(null=True, blank=True)
    result_leaf_id = models.TextField(null=True, blank=True)
    editor_text = models.TextField(null=True, blank=True)
    replaced_first_seq = models.IntegerField(null=True, blank=True)
    replaced_last_seq = models.IntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.IntegerField(null=True, blank=True)

    objects = CompactionRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["session", "-created_at"], name="run_session_created_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.operation_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL
