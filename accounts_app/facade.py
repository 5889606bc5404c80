"""What other apps may use of ``accounts_app``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from accounts_app.signin_throttle import ThrottledLoginView, admin_sign_in

__all__ = [
    "ThrottledLoginView",
    "admin_sign_in",
]
