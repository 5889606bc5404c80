"""Organize routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from organize import api

app_name = "organize_api"

urlpatterns = [
    path("sessions/<int:pk>/pin/", api.PinView.as_view(), name="pin"),
    path("sessions/<int:pk>/archive/", api.ArchiveView.as_view(), name="archive"),
    path("sessions/<int:pk>/tags/", api.SessionTagsView.as_view(), name="session-tags"),
    path("sessions/<int:pk>/tags/<int:tag_id>/", api.SessionTagView.as_view(), name="session-tag"),
    path("teams/<int:team_id>/tags/", api.TeamTagsView.as_view(), name="team-tags"),
    path("tags/<int:tag_id>/", api.TagView.as_view(), name="tag"),
    path("saved-filters/", api.SavedFiltersView.as_view(), name="saved-filters"),
    path("saved-filters/<int:filter_id>/", api.SavedFilterView.as_view(), name="saved-filter"),
    path("sessions/bulk/", api.BulkView.as_view(), name="bulk"),
]
