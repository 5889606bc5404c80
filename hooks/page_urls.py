"""The hooks pages, included at the site's root."""

from __future__ import annotations

from django.urls import path

from hooks import views

app_name = "hooks"

urlpatterns = [
    path("hooks/", views.my_hooks_page, name="mine"),
    path("teams/<int:team_id>/hooks/", views.team_hooks_page, name="team"),
]
