"""The runners page, included at the site's root."""

from __future__ import annotations

from django.urls import path

from runners import views

app_name = "runners"

urlpatterns = [path("runners/", views.runners_page, name="page")]
