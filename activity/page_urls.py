"""HTML page routes of team activity, included at the site root."""

from __future__ import annotations

from django.urls import path

from activity import views

app_name = "team_activity"

urlpatterns = [
    path("teams/<int:team_id>/activity/", views.activity_page, name="page"),
    path("teams/<int:team_id>/activity.csv", views.activity_csv, name="csv"),
]
