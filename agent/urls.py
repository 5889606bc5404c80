"""Agent run routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from agent import api

app_name = "agent_api"

urlpatterns = [
    path("sessions/<int:pk>/runs/", api.SessionRunsView.as_view(), name="session-runs"),
    path(
        "sessions/<int:pk>/runs/regenerate/",
        api.SessionRegenerateView.as_view(),
        name="session-runs-regenerate",
    ),
    path("sessions/<int:pk>/runs/edit/", api.SessionEditView.as_view(), name="session-runs-edit"),
    path("sessions/<int:pk>/runs/render/", api.StreamRenderView.as_view(), name="session-runs-render"),
    path("sessions/<int:pk>/runs/stop/", api.SessionStopView.as_view(), name="session-runs-stop"),
    path("runs/<uuid:run_id>/", api.RunDetailView.as_view(), name="run-detail"),
    path("runs/<uuid:run_id>/abort/", api.RunAbortView.as_view(), name="run-abort"),
]
