"""Discussion API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from discussion import api

app_name = "discussion_api"

urlpatterns = [
    path("sessions/<int:pk>/comments/", api.CommentsView.as_view(), name="comments"),
    path("sessions/<int:pk>/comments/export/", api.CommentExportView.as_view(), name="comments-export"),
    path("sessions/<int:pk>/comments/people/", api.MentionPeopleView.as_view(), name="comments-people"),
    path("comments/<int:comment_id>/", api.CommentDetailView.as_view(), name="comment-detail"),
    path("inbox/", api.InboxView.as_view(), name="inbox"),
    path("inbox/read/", api.InboxReadView.as_view(), name="inbox-read"),
    path("inbox/settings/", api.InboxSettingsView.as_view(), name="inbox-settings"),
    path("teams/<int:team_id>/discussion/", api.TeamDiscussionView.as_view(), name="team-discussion"),
]
