"""Pins, team tags, archived sessions and saved filters: how people organize the sessions they may read.

Every table here is an index the session list filters by (``organize.filters``), so each is keyed the way
the list asks: pins by (user, session), tags applied by (tag, session), archive by session.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from sessions_app.models import ChatSession
from teams.models import Team

COLOURS = ("grey", "red", "orange", "yellow", "green", "teal", "blue", "purple", "pink")


class Pin(models.Model):
    """A session one person keeps at hand; nobody else sees it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "session"], name="organize_pin_once")]


class Tag(models.Model):
    """A team's tag: its editors manage it, and it is applied to sessions shared with the team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=40)
    colour = models.CharField(max_length=16, default="grey")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(Lower("name"), "team", name="organize_tag_name_per_team")]

    def __str__(self) -> str:
        return self.name


class SessionTag(models.Model):
    """A tag on a session."""

    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="applied")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # (tag, session) answers the filter; the session index answers a page's tags.
        constraints = [models.UniqueConstraint(fields=["tag", "session"], name="organize_tag_once")]


class Archived(models.Model):
    """A session hidden from the default list; nothing of it is deleted and restoring drops this row."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, primary_key=True, related_name="+")
    archived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    archived_at = models.DateTimeField(auto_now_add=True)


class SavedFilter(models.Model):
    """A named query string of the session list: one person's (``user``) or a team's (``team``)."""

    name = models.CharField(max_length=80)
    query = models.CharField(max_length=2000)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, team__isnull=True)
                | models.Q(user__isnull=True, team__isnull=False),
                name="organize_filter_one_owner",
            )
        ]
        indexes = [
            models.Index(fields=["user"], name="organize_filter_user"),
            models.Index(fields=["team"], name="organize_filter_team"),
        ]

    def __str__(self) -> str:
        return self.name
