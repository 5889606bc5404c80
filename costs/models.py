"""Costs kept at append time, so no page reads a session's messages to add them up."""

from __future__ import annotations

from django.db import models

from sessions_app.models import ChatSession


class MessageCost(models.Model):
    """One stored assistant message: its own usage and cost, and the sums along its path from the root.

    Written by ``recording.record`` in the transaction that stored the entry; never changed after, since
    an entry never changes parent. ``segment``/``depth`` are the entry's, so the nearest assistant
    ancestor of any entry is one indexed lookup per segment of its path.
    """

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.IntegerField(help_text="The entry's append sequence")
    segment = models.IntegerField()
    depth = models.IntegerField()
    model = models.CharField(max_length=512)
    day = models.DateField(help_text="UTC day of the entry's timestamp (the day stored, if it has none)")
    input = models.BigIntegerField(default=0)
    output = models.BigIntegerField(default=0)
    cache_read = models.BigIntegerField(default=0)
    cache_write = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)
    source = models.CharField(max_length=10)
    path_cost = models.FloatField(default=0, help_text="Cost of the assistant messages root → this one")
    path_tokens = models.BigIntegerField(default=0)
    path_messages = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="costs_message_seq")]
        indexes = [models.Index(fields=["session", "segment", "depth"], name="costs_message_path_idx")]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq} {self.cost}"


class UsageDay(models.Model):
    """A session's assistant messages per UTC day and model, summed at append time.

    Session, user and team totals and the usage charts add up these few rows. The copies a fork or
    clone starts with have rows of their own (``copied``): the session's totals count them, a user's and
    a team's usage do not (the source session counted them already).
    """

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField(
        help_text="UTC day of the messages' timestamps (the day stored, if they have none)"
    )
    model = models.CharField(max_length=512)
    input = models.BigIntegerField(default=0)
    output = models.BigIntegerField(default=0)
    cache_read = models.BigIntegerField(default=0)
    cache_write = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)
    messages = models.IntegerField(default=0)
    unpriced = models.IntegerField(default=0, help_text="Messages with neither a recorded cost nor a price")
    copied = models.BooleanField(
        default=False, help_text="Messages a fork or clone copied from its source (counted there)"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "day", "model", "copied"], name="costs_usage_day")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} {self.day} {self.model}"
