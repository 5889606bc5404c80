"""Review API routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from reviews import api

app_name = "reviews_api"

urlpatterns = [
    path("reviews/", api.QueueView.as_view(), name="queue"),
    path("reviews/<int:review_id>/", api.ReviewDetailView.as_view(), name="detail"),
    path("reviews/<int:review_id>/decision/", api.DecisionView.as_view(), name="decision"),
    path("reviews/<int:review_id>/withdraw/", api.WithdrawView.as_view(), name="withdraw"),
    path("reviews/<int:review_id>/request/", api.RerequestView.as_view(), name="rerequest"),
    path("sessions/<int:pk>/reviews/", api.SessionReviewsView.as_view(), name="session-reviews"),
]
