"""Comment text as it may leave piweb by email: with any secret the detectors see masked."""

from __future__ import annotations

from discussion.models import Comment
from documents.secrets import masked

__all__ = ["masked_body"]


def masked_body(comment: Comment) -> str:
    """Return the body with its secrets replaced by markers, redacted yet or not."""
    return masked(comment.body)
