"""Governance API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from governance import api

app_name = "governance_api"

urlpatterns = [
    path("secrets/", api.SecretsSummaryView.as_view(), name="secrets-summary"),
    path("secrets/check/", api.CheckTextView.as_view(), name="secrets-check"),
    path("sessions/<int:pk>/secrets/", api.SessionSecretsView.as_view(), name="session-secrets"),
    path("sessions/<int:pk>/secrets/redact/", api.SessionRedactView.as_view(), name="session-secrets-redact"),
    path("links/<int:link_id>/views/", api.LinkViewsView.as_view(), name="link-views"),
]
