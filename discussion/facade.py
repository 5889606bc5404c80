"""What other apps may use of ``discussion``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from discussion import signals
from discussion.models import Comment
from discussion.services import notify, post_comment, rewrite_comment

__all__ = ["Comment", "notify", "post_comment", "rewrite_comment", "signals"]
