"""Agent runs: one prompt, its streamed answers, and every recovery the run went through."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from sessions_app.models import ChatSession


class AgentRunQuerySet(models.QuerySet["AgentRun"]):
    def visible_to(self, user: Any) -> AgentRunQuerySet:
        """Return the runs of sessions ``user`` may read."""
        return self.filter(session__in=ChatSession.objects.visible_to(user))

    def active(self) -> AgentRunQuerySet:
        return self.filter(status__in=AgentRun.ACTIVE)


class AgentRun(models.Model):
    """One prompt answered in a worker. At most one run per session is queued or running at a time."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        ABORTED = "aborted"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.ABORTED})

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="agent_runs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    provider = models.ForeignKey(
        "providers.LLMProvider", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    prompt = models.TextField()
    images = models.JSONField(
        default=list, blank=True, help_text="Pictures attached to the prompt, as Pi's image content blocks"
    )
    thinking_level = models.CharField(max_length=20, blank=True, default="")
    error = models.TextField(blank=True, default="")
    abort_requested = models.BooleanField(default=False)
    recovery_attempted = models.BooleanField(
        default=False, help_text="The overflow fuse: set by a compact-and-retry, reset by a clean reply"
    )
    retry_attempts = models.PositiveIntegerField(default=0, help_text="Transient-error retries made")
    recovery_events = models.JSONField(
        default=list,
        blank=True,
        help_text="One item per recovery: kind, failed entry, omitted entries, compaction, retry outcome",
    )
    regenerate_from = models.TextField(
        null=True,
        blank=True,
        help_text="The assistant entry this run answers again: the run starts at its parent, on a new branch",
    )
    edit_of = models.TextField(
        null=True,
        blank=True,
        help_text="The user message this run's prompt replaces: the prompt goes beside it, on a new branch",
    )
    user_entry_id = models.TextField(null=True, blank=True)
    final_entry_id = models.TextField(null=True, blank=True, help_text="The last assistant entry written")
    stop_reason = models.CharField(max_length=20, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = AgentRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["queued", "running"]),
                name="one_active_agent_run_per_session",
            )
        ]
        indexes = [models.Index(fields=["session", "-created_at"], name="agentrun_session_created_idx")]

    def __str__(self) -> str:
        return f"run {self.public_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL
