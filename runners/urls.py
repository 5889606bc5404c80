"""Runner routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from runners import api

app_name = "runners_api"

urlpatterns = [
    path("runners/", api.RunnersView.as_view(), name="runners"),
    path("runners/<int:runner_id>/", api.RunnerDetailView.as_view(), name="runner-detail"),
    path("sessions/<int:pk>/runners/", api.SessionRunnersView.as_view(), name="session-runners"),
    path("sessions/<int:pk>/runs/remote/", api.SessionRemoteRunView.as_view(), name="session-remote-run"),
    path("sessions/<int:pk>/handoff/", api.SessionHandoffView.as_view(), name="session-handoff"),
    path("runs/<uuid:run_id>/steer/", api.RunMessageView.as_view(), name="run-steer"),
    path("runs/<uuid:run_id>/follow-up/", api.RunFollowUpView.as_view(), name="run-follow-up"),
]
