"""Runners: machines with Pi and a workspace that run sessions for their owner or their team.

A runner connects out to piweb over one WebSocket with a token of its own (only its digest is stored),
says what it offers (workspaces, Pi version, tools, models), and takes runs dispatched to it. A run on a
runner is an ``AgentRun`` (the page's Stop, busy state and one-active-run rule apply as to any run) with
a ``RunnerRun`` beside it naming the runner and the workspace.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models

from agent.facade import AgentRun

TOKEN_PREFIX = "pwr_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class RunnerQuerySet(models.QuerySet["Runner"]):
    def active(self) -> RunnerQuerySet:
        return self.filter(revoked_at__isnull=True)


class Runner(models.Model):
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runners")
    team = models.ForeignKey(
        "teams.Team",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="runners",
        help_text="A team's runner serves the team's editors; without a team it serves its owner only",
    )
    token_digest = models.CharField(max_length=64, unique=True)
    token_id = models.CharField(max_length=12, help_text="The token's first characters, to tell it apart")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    disconnected_at = models.DateTimeField(null=True, blank=True)
    info = models.JSONField(
        default=dict, blank=True, help_text="What it said of itself: workspaces, Pi version, tools, models"
    )

    objects = RunnerQuerySet.as_manager()

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"runner {self.name}"

    @property
    def online(self) -> bool:
        return self.connected_at is not None and (
            self.disconnected_at is None or self.disconnected_at < self.connected_at
        )

    @staticmethod
    def new_token() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)

    def workspaces(self) -> list[str]:
        return self._listed("workspaces")

    def models(self) -> list[str]:
        """The models Pi offers there, as ``provider/id``."""
        return self._listed("models")

    def _listed(self, key: str) -> list[str]:
        found: Any = self.info.get(key) if isinstance(self.info, dict) else None
        return [str(w) for w in found] if isinstance(found, list) else []


class RunnerRun(models.Model):
    """Which runner and workspace an agent run went to."""

    run = models.OneToOneField(AgentRun, on_delete=models.CASCADE, related_name="on_runner")
    runner = models.ForeignKey(Runner, on_delete=models.CASCADE, related_name="runs")
    workspace = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"{self.run} on {self.runner}"
