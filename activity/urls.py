"""Team activity routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from activity import api

app_name = "team_activity_api"

urlpatterns = [
    path("teams/<int:team_id>/activity/", api.TeamActivityView.as_view(), name="team-activity"),
    path("teams/<int:team_id>/activity/digest/", api.DigestChoiceView.as_view(), name="digest-choice"),
]
