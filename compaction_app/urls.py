"""Compaction API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from compaction_app.api import views

app_name = "compaction_api"

urlpatterns = [
    path("sessions/<int:pk>/compact/", views.CompactView.as_view(), name="session-compact"),
    path("sessions/<int:pk>/navigate/", views.NavigateView.as_view(), name="session-navigate"),
    path("operations/<uuid:operation_id>/", views.OperationView.as_view(), name="operation-detail"),
    path(
        "operations/<uuid:operation_id>/cancel/", views.CancelOperationView.as_view(), name="operation-cancel"
    ),
]
