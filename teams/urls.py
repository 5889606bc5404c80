"""Team API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from teams import api

app_name = "teams_api"

urlpatterns = [
    path("teams/", api.TeamListView.as_view(), name="team-list"),
    path("teams/<int:team_id>/", api.TeamDetailView.as_view(), name="team-detail"),
    path("teams/<int:team_id>/members/", api.TeamMembersView.as_view(), name="team-members"),
    path("teams/<int:team_id>/invitations/", api.TeamInvitationsView.as_view(), name="team-invitations"),
    path(
        "teams/<int:team_id>/invitations/<int:invitation_id>/",
        api.TeamInvitationDetailView.as_view(),
        name="team-invitation-detail",
    ),
    path("invitations/", api.InvitationListView.as_view(), name="invitation-list"),
    path(
        "invitations/<int:invitation_id>/accept/",
        api.InvitationAcceptView.as_view(),
        name="invitation-accept",
    ),
    path(
        "invitations/<int:invitation_id>/decline/",
        api.InvitationDeclineView.as_view(),
        name="invitation-decline",
    ),
    path(
        "teams/<int:team_id>/members/<str:username>/",
        api.TeamMemberDetailView.as_view(),
        name="team-member-detail",
    ),
]
