"""Cost and usage routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from costs import api

app_name = "costs_api"

urlpatterns = [
    path("sessions/<int:pk>/cost/", api.SessionCostView.as_view(), name="session-cost"),
    path("usage/", api.MyUsageView.as_view(), name="usage"),
    path("usage/sessions/", api.SessionsCostView.as_view(), name="usage-sessions"),
    path("teams/<int:team_id>/usage/", api.TeamUsageView.as_view(), name="team-usage"),
]
