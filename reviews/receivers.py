"""Where reviews listen to sessions_app (which never imports this app): new entries outdate reviews."""

from __future__ import annotations

import logging
from typing import Any

from reviews.services import mark_outdated
from sessions_app.facade import signals

log = logging.getLogger(__name__)


def outdate_after_commit(
    sender: Any, *, session_id: int, first_seq: int, last_seq: int, rows: Any = None, **kwargs: Any
) -> None:
    """Mark the reviews the committed entries change; the write has committed, so nothing here fails it."""
    try:
        mark_outdated(session_id, first_seq, last_seq, rows)
    except Exception:
        log.exception(
            "reviews of session %s were not checked for entries %s-%s", session_id, first_seq, last_seq
        )


signals.entries_committed.connect(outdate_after_commit, dispatch_uid="reviews-outdated")
