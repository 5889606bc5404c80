"""What other apps may use of ``live``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from live.routing import websocket_urlpatterns
from live.writers import MAX_DEVICE_CHARS, pi_left, pi_writing
from live.writers import heartbeat_seconds as writer_heartbeat_seconds

__all__ = [
    "MAX_DEVICE_CHARS",
    "pi_left",
    "pi_writing",
    "websocket_urlpatterns",
    "writer_heartbeat_seconds",
]
