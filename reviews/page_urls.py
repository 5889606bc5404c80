"""Review pages, included at the site's root."""

from __future__ import annotations

from django.urls import path

from reviews import views

app_name = "reviews"

urlpatterns = [
    path("reviews/", views.queue_page, name="queue"),
    path("teams/<int:team_id>/reviews/", views.queue_page, name="team-queue"),
]
