"""Discussion pages, included at the site's root."""

from __future__ import annotations

from django.urls import path

from discussion import views

app_name = "discussion"

urlpatterns = [path("inbox/", views.inbox_page, name="inbox")]
