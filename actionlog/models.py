"""The action log: who did what to which session or team, written by every app's use cases.

The table kept the name it had when the log lived in ``sessions_app``, so no data moved.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class ActionLog(models.Model):
    """Append-only record of who did what to which session."""

    class ActorKind(models.TextChoices):
        USER = "user"
        LINK = "link"
        SYSTEM = "system"
        ANONYMOUS = "anonymous"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_kind = models.CharField(max_length=10, choices=ActorKind.choices, default=ActorKind.USER)
    actor_name = models.CharField(
        max_length=150,
        blank=True,
        default="",
        help_text="The username, link or system actor; kept when the user is deleted",
    )
    # A verb some app declared (``actionlog.verbs``): no choices, so a new verb needs no migration.
    action = models.CharField(max_length=16)
    session = models.ForeignKey(
        "sessions_app.ChatSession", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    session_label = models.TextField(blank=True, default="", help_text="Kept when the session is deleted")
    session_number = models.BigIntegerField(
        null=True, blank=True, db_index=True, help_text="The session's id, kept when it is purged"
    )
    team = models.ForeignKey("teams.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    team_label = models.TextField(blank=True, default="", help_text="Kept when the team is deleted")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "sessions_app_actionlog"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session", "-created_at"], name="actionlog_session_idx"),
            models.Index(fields=["actor", "-created_at"], name="actionlog_actor_idx"),
            models.Index(fields=["team", "-created_at"], name="actionlog_team_idx"),
            models.Index(fields=["action", "-created_at"], name="actionlog_action_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name or self.actor} {self.action} {self.session_label or self.team_label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ValueError("the action log is append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("the action log is append-only")
