"""Hook routes, included under ``api/``."""

from __future__ import annotations

from django.urls import path

from hooks import api

app_name = "hooks_api"

urlpatterns = [
    path("hooks/", api.HooksView.as_view(), name="hooks"),
    path("teams/<int:team_id>/hooks/", api.TeamHooksView.as_view(), name="team-hooks"),
    path("hooks/<int:hook_id>/", api.HookDetailView.as_view(), name="hook"),
    path("hooks/<int:hook_id>/rotate/", api.RotateSecretView.as_view(), name="hook-rotate"),
    path("hooks/<int:hook_id>/ping/", api.PingView.as_view(), name="hook-ping"),
    path("hooks/<int:hook_id>/deliveries/", api.DeliveriesView.as_view(), name="hook-deliveries"),
    path(
        "hooks/<int:hook_id>/deliveries/<int:delivery_id>/replay/",
        api.ReplayView.as_view(),
        name="hook-replay",
    ),
]
