"""The team activity rollup: per session and ISO week, kept as entries, runs, costs and reviews are written.

The team page joins these rows with the team's shares (``SessionShare``), so a session unshared from a
team leaves its numbers at once, and nothing here is copied per team.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.models import ChatSession
from teams.models import Team


class WeekActivity(models.Model):
    """What one person did in one session in one ISO week (``week`` is its Monday).

    A session's answers, cost, tool calls and changed files count for its owner; a run for whoever
    started it; a review for whoever requested or decided it. So a session has one row per week and person.
    """

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    week = models.DateField(help_text="Monday of the ISO week (UTC)")
    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    answers = models.IntegerField(db_default=0, help_text="Assistant messages stored this week (owner's row)")
    runs = models.IntegerField(db_default=0)
    failed_runs = models.IntegerField(db_default=0)
    reviews = models.IntegerField(db_default=0)
    cost = models.FloatField(db_default=0, help_text="Dollars of the session's own messages (owner's row)")
    tool_calls = models.IntegerField(db_default=0, help_text="Every tool's calls (owner's row)")
    # Pi's own tools have a column each, so the tool mix is read with the rest of the row; the calls of
    # other tools (an extension's) are in ``ToolWeek``.
    tool_read = models.IntegerField(db_default=0)
    tool_bash = models.IntegerField(db_default=0)
    tool_edit = models.IntegerField(db_default=0)
    tool_write = models.IntegerField(db_default=0)
    tool_grep = models.IntegerField(db_default=0)
    tool_find = models.IntegerField(db_default=0)
    tool_ls = models.IntegerField(db_default=0)
    files_changed = models.IntegerField(db_default=0, help_text="Distinct paths edited or written this week")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "week", "person"], name="activity_week_person")
        ]
        # A team's page reads its shared sessions' rows in a range of weeks.
        indexes = [models.Index(fields=["session", "week"], name="activity_session_week_idx")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.week} {self.person_id}"


PI_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")  # a ``tool_<name>`` column each


class ToolWeek(models.Model):
    """Calls of a tool other than Pi's own (``PI_TOOLS``) a session's messages asked for in one ISO week."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    week = models.DateField()
    tool = models.CharField(max_length=200)
    calls = models.IntegerField(db_default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "week", "tool"], name="activity_tool_week")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.week} {self.tool}"


class FileWeek(models.Model):
    """A path a session's edit or write calls changed in one ISO week, and how many calls did."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    week = models.DateField()
    # Paths can be longer than an index entry may be: the key is their hash.
    digest = models.CharField(max_length=64, help_text="SHA-256 of the path, in hex")
    path = models.TextField(help_text="As the Files panel shows it (relative to the session's folder)")
    changes = models.IntegerField(db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "week", "digest"], name="activity_file_week")
        ]

    def __str__(self) -> str:
        return f"{self.session_id} {self.week} {self.path}"


class DigestChoice(models.Model):
    """A member's choice about a team's weekly digest; without a row, they get it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    wanted = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="activity_digest_choice")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.team_id} {self.wanted}"


class DigestSent(models.Model):
    """One member's digest of one team and week, marked in the transaction that sent it: never twice."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    week = models.DateField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "week", "user"], name="activity_digest_sent")]

    def __str__(self) -> str:
        return f"{self.team_id} {self.week} {self.user_id}"
