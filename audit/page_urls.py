"""The activity page, included at the site's root."""

from __future__ import annotations

from django.urls import path

from audit import activity_views

app_name = "activity"

urlpatterns = [path("activity/", activity_views.activity_page, name="activity")]
