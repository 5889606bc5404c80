"""WebSocket routes, mounted by ``piweb.asgi`` behind the Origin check and the session-cookie auth."""

from __future__ import annotations

from django.urls import path

from .consumers import SessionConsumer

websocket_urlpatterns = [
    path("ws/sessions/<int:pk>/", SessionConsumer.as_asgi()),
]
