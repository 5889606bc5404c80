"""Activity routes: the API (included under ``api/``) and the page (at the site's root)."""

from __future__ import annotations

from django.urls import path

from audit import activity_api

app_name = "activity_api"

urlpatterns = [path("activity/", activity_api.ActivityView.as_view(), name="activity")]
