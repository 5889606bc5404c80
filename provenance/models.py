"""Provenance: the git workspace a session was pushed or run from, the commits its entries made, and the
pull requests it opened. Rows of piweb's own, beside the entries (Pi's lines stay byte-exact)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from sessions_app.models import ChatSession


class Source(models.TextChoices):
    SYNC = "sync", "a push of piweb-sync"
    RUNNER = "runner", "a run on a runner"


class Found(models.TextChoices):
    RUNNER = "runner", "HEAD before and after a run on a runner"
    OUTPUT = "output", "git commit output in a bash result"


class WorkspaceState(models.Model):
    """The repository, branch and HEAD of a session's folder when it was pushed or run."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    repository = models.CharField(max_length=500, blank=True, default="", help_text="Without credentials")
    branch = models.CharField(max_length=255, blank=True, default="")
    head = models.CharField(max_length=40, blank=True, default="")
    source = models.CharField(max_length=10, choices=Source.choices)
    seen_at = models.DateTimeField(default=timezone.now)
    seq = models.IntegerField(null=True, blank=True, help_text="The session's last entry then")

    class Meta:
        indexes = [models.Index(fields=["session", "seen_at"], name="prov_workspace_session_idx")]

    def __str__(self) -> str:
        return f"{self.repository or 'a repository'} {self.branch} at {self.head[:12]}"


class Commit(models.Model):
    """A commit an entry of the session made, as much of its SHA as is known."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    sha = models.CharField(max_length=40, help_text="Lower-case hex, full or abbreviated as git printed it")
    repository = models.CharField(max_length=500, blank=True, default="")
    branch = models.CharField(max_length=255, blank=True, default="")
    subject = models.CharField(max_length=500, blank=True, default="")
    entry_id = models.TextField(null=True, blank=True, help_text="The Pi id of the entry that made it")
    seq = models.IntegerField(null=True, blank=True)
    found = models.CharField(max_length=10, choices=Found.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "sha"], name="prov_commit_unique")]
        indexes = [
            # "Which sessions made this commit": by SHA or a prefix of it.
            models.Index(fields=["sha"], name="prov_commit_sha_idx", opclasses=["varchar_pattern_ops"]),
            models.Index(fields=["session", "seq"], name="prov_commit_session_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.sha[:12]} {self.subject}"


class PullRequest(models.Model):
    """A pull-request URL an entry's output named (normalized for GitHub and GitLab, else as printed)."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    url = models.CharField(max_length=500)
    normalized = models.BooleanField(default=True, help_text="A GitHub or GitLab pull-request URL")
    entry_id = models.TextField(null=True, blank=True)
    seq = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "url"], name="prov_pr_unique")]
        indexes = [models.Index(fields=["url"], name="prov_pr_url_idx")]

    def __str__(self) -> str:
        return self.url
