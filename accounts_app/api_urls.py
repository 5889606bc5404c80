"""API token routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from accounts_app import api as tokens

app_name = "tokens_api"

urlpatterns = [
    path("token/", tokens.TokenObtainView.as_view(), name="token"),
    path("tokens/", tokens.TokenListView.as_view(), name="token-list"),
    path("tokens/<str:token_id>/", tokens.TokenDetailView.as_view(), name="token-detail"),
]
