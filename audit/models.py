"""Read models for the admin audit: facts extracted from entries and runs so they can be filtered."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agent.models import AgentRun
from sessions_app.models import ChatSession, Entry


class OmittedAttempt(models.Model):
    """One ``context_edit`` entry and what it edited; rebuilt from the entries, never edited by hand.

    Rows exist for every edit (``omits`` says whether it removed its target) so a sync pass can tell
    which edits it has already seen; the admin lists only the omitting ones.
    """

    class Why(models.TextChoices):
        OVERFLOW = "overflow", "overflow"
        TRANSIENT = "transient", "transient retry"
        LENGTH = "length", "length"
        MANUAL = "manual", "manual"

    # Entries are append-only and go only with their session, which takes these rows with it (``session``
    # below). A Python-level cascade here would make Django load every entry of a deleted session into
    # memory (3 GB for 3M entries) to look for rows of this table, and a database constraint would run
    # one check per deleted entry (76 s for 1M); without either the entries go in one plain DELETE.
    edit = models.OneToOneField(Entry, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    omits = models.BooleanField(default=True, help_text="False for edits that replace content instead")
    edit_entry_id = models.TextField()
    target_entry_id = models.TextField(blank=True, default="")
    target_role = models.TextField(blank=True, default="")
    stop_reason = models.CharField(max_length=20, blank=True, default="")
    error = models.TextField(blank=True, default="")
    provider = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    why = models.CharField(max_length=10, choices=Why.choices, default=Why.MANUAL)
    retry_succeeded = models.BooleanField(
        null=True, blank=True, help_text="Unknown while no retry has followed the omission"
    )
    omitted_at = models.DateTimeField(null=True, blank=True, help_text="The edit's own timestamp")
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-omitted_at", "-edit_id"]
        verbose_name = "omitted failed attempt"
        indexes = [
            models.Index(fields=["-omitted_at"], name="omitted_attempt_when_idx"),
            models.Index(fields=["retry_succeeded", "omits"], name="omitted_attempt_pending_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.target_entry_id} omitted by {self.edit_entry_id}"


class UsageRollup(ChatSession):
    """Admin handle for the usage rollup page; it has no rows of its own."""

    class Meta:
        proxy = True
        verbose_name = "usage rollup"
        verbose_name_plural = "usage rollups"


class SessionUsage(models.Model):
    """A session's assistant-message usage per model, kept at append time (``usage_rollup.record``).

    The usage page sums these rows instead of every message; deleting a session drops its rows.
    """

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=512)  # "provider/model", as the page shows it
    input = models.FloatField(default=0)
    output = models.FloatField(default=0)
    cache_read = models.FloatField(default=0)
    cache_write = models.FloatField(default=0)
    # Exact, so the page's cost equals a recount whatever order the batches came in.
    cost = models.DecimalField(max_digits=60, decimal_places=20, default=0)
    messages = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "model"], name="audit_usage_session_model")]
