"""HTML page routes, included at the site root."""

from __future__ import annotations

from django.urls import path

from sessions_app import views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("import/", views.import_page, name="import"),
    path("sessions/<int:pk>/", views.session_detail, name="detail"),
    path("sessions/<int:pk>/compare/", views.compare_page, name="compare"),
    path("s/<str:token>/", views.shared_session, name="shared"),
    path("links/", views.links_page, name="links"),
    path("teams/", views.teams_page, name="teams"),
    path("teams/<int:team_id>/", views.team_page, name="team"),
    path("tokens/", views.tokens_page, name="tokens"),
]
