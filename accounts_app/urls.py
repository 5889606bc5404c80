"""API token routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from accounts_app import api

app_name = "tokens_api"

urlpatterns = [
    path("token/", api.TokenObtainView.as_view(), name="token"),
    path("tokens/", api.TokenListView.as_view(), name="token-list"),
    path("tokens/<str:token_id>/", api.TokenDetailView.as_view(), name="token-detail"),
]
