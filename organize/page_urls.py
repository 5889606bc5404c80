"""The tags page, included at the site's root."""

from __future__ import annotations

from django.urls import path

from organize import views

app_name = "organize"

urlpatterns = [path("tags/", views.tags_page, name="tags")]
