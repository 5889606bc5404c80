"""Teams: who belongs to which team with which role, and the invitations that lead there.

The tables kept the names they had when teams lived in ``sessions_app``, so no data moved.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Team(models.Model):
    class DefaultShare(models.TextChoices):
        NONE = "", "not shared"
        VIEWER = "viewer"
        EDITOR = "editor"

    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    default_share = models.CharField(
        max_length=10,
        choices=DefaultShare.choices,
        blank=True,
        default="",
        db_default="",
        help_text="Sessions members import or sync are shared with the team with this access when created",
    )
    # Only such a team takes members from the identity provider's groups: a team a user made with the
    # same name as a mapped one must never receive the provider's users.
    managed_by_provider = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Memberships follow the identity provider's groups (PIWEB_OIDC_TEAM_MAP)",
    )

    class Meta:
        db_table = "sessions_app_team"

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        EDITOR = "editor"
        VIEWER = "viewer"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        db_table = "sessions_app_teammembership"
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="unique_team_member")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


# Team roles that may change a session shared with the team as editor.
WRITER_ROLES = (TeamMembership.Role.OWNER, TeamMembership.Role.EDITOR)


class TeamInvitation(models.Model):
    """An owner's offer of a role in a team; the invitee becomes a member only by accepting it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_invitations"
    )
    role = models.CharField(
        max_length=10, choices=TeamMembership.Role.choices, default=TeamMembership.Role.VIEWER
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "sessions_app_teaminvitation"
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="unique_team_invitation")]

    def __str__(self) -> str:
        return f"{self.user} invited to {self.team} ({self.role})"
