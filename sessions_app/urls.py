"""Session API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from sessions_app.api import continue_in_pi, search, session_settings, sharing, views

app_name = "sessions_api"

urlpatterns = [
    path("sessions/", views.SessionListView.as_view(), name="session-list"),
    path("search/", search.SearchView.as_view(), name="search"),
    path("sessions/import/", views.ImportView.as_view(), name="session-import"),
    path("sessions/<int:pk>/", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<int:pk>/entries/", views.EntryListView.as_view(), name="entry-list"),
    path("sessions/<int:pk>/entries/<str:entry_id>/", views.EntryDetailView.as_view(), name="entry-detail"),
    path("sessions/<int:pk>/tree/", views.TreeView.as_view(), name="session-tree"),
    path("sessions/<int:pk>/context/", views.ContextView.as_view(), name="session-context"),
    path("sessions/<int:pk>/path/", views.PathView.as_view(), name="session-path"),
    path("sessions/<int:pk>/files/", views.FilesView.as_view(), name="session-files"),
    path("sessions/<int:pk>/fork/", views.ForkView.as_view(), name="session-fork"),
    path("sessions/<int:pk>/clone/", views.CloneView.as_view(), name="session-clone"),
    path("sessions/<int:pk>/labels/", views.LabelView.as_view(), name="session-labels"),
    path("sessions/<int:pk>/append/", views.AppendView.as_view(), name="session-append"),
    path("sessions/<int:pk>/export/", views.ExportView.as_view(), name="session-export"),
    path("sessions/<int:pk>/search/", search.SessionSearchView.as_view(), name="session-search"),
    path(
        "sessions/<int:pk>/settings/", session_settings.SessionSettingsView.as_view(), name="session-settings"
    ),
    path(
        "sessions/<int:pk>/continue-in-pi/",
        continue_in_pi.ContinueInPiView.as_view(),
        name="session-continue-in-pi",
    ),
    path("sessions/<int:pk>/shares/", sharing.SessionSharesView.as_view(), name="session-shares"),
    path(
        "sessions/<int:pk>/shares/<int:team_id>/",
        sharing.SessionShareDetailView.as_view(),
        name="session-share-detail",
    ),
    path("sessions/<int:pk>/links/", sharing.SessionLinksView.as_view(), name="session-links"),
    path("links/<int:link_id>/", sharing.LinkDetailView.as_view(), name="link-detail"),
    path("teams/<int:team_id>/sessions/", sharing.TeamSessionsView.as_view(), name="team-sessions"),
]
