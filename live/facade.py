"""What other apps may use of ``live``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from live.routing import websocket_urlpatterns

__all__ = [
    "websocket_urlpatterns",
]
