"""The sync routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from sync import api

app_name = "sync_api"

urlpatterns = [
    path("sync/", api.SyncView.as_view(), name="sync"),
    path("sync/presence/", api.PiBeatView.as_view(), name="pi-beat"),
]
