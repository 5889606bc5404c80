"""What other apps may use of ``reviews``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from reviews import signals
from reviews.models import Review, Reviewer
from reviews.services import decide_review, request_review, rerequest_review, withdraw_review

__all__ = [
    "Review",
    "Reviewer",
    "decide_review",
    "request_review",
    "rerequest_review",
    "signals",
    "withdraw_review",
]
