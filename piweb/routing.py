"""The websocket routes: the session socket (``live``) and the runners' socket, in one list."""

from __future__ import annotations

from typing import Any

from django.urls import path

from live.facade import websocket_urlpatterns
from runners.facade import RunnerConsumer

__all__ = ["websocket_routes"]


def websocket_routes() -> list[Any]:
    # The runners' socket first: the session routes end with a catch-all that refuses any other path.
    return [path("ws/runner/", RunnerConsumer.as_asgi()), *websocket_urlpatterns]
