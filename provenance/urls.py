"""Provenance routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from provenance import api

app_name = "provenance_api"

urlpatterns = [
    path("provenance/", api.ProvenanceView.as_view(), name="provenance"),
    path("sessions/<int:pk>/commits/", api.SessionCommitsView.as_view(), name="session-commits"),
]
