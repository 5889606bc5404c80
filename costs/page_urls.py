"""HTML page routes of costs, included at the site root."""

from __future__ import annotations

from django.urls import path

from costs import views

app_name = "costs"

urlpatterns = [path("usage/", views.usage_page, name="usage")]
