"""WebSocket routes, mounted by ``piweb.asgi`` behind the Origin check and the session-cookie auth."""

from __future__ import annotations

from django.urls import path, re_path

from live.consumers import NotFoundConsumer, SessionConsumer

websocket_urlpatterns = [
    path("ws/sessions/<int:pk>/", SessionConsumer.as_asgi()),
    # Any other path is refused with a close code instead of an unhandled "no route" error.
    re_path(r"", NotFoundConsumer.as_asgi()),
]
