"""The events a hook may choose, and who may hear each one."""

from __future__ import annotations

MENTION = "mention"
REVIEW_REQUESTED = "review.requested"
REVIEW_DECIDED = "review.decided"
RUN_ENDED = "run.ended"
RUN_FAILED = "run.failed"
SECRET_FOUND = "secret.found"
SESSION_SHARED = "session.shared"
# Sent only by "Send a test" on a hook's page; nobody subscribes to it.
PING = "ping"

EVENTS: dict[str, str] = {
    MENTION: "someone is mentioned in a comment",
    REVIEW_REQUESTED: "a review is requested",
    REVIEW_DECIDED: "a review is decided",
    RUN_ENDED: "a run ended",
    RUN_FAILED: "a run failed",
    SECRET_FOUND: "a secret was found in a session",
    SESSION_SHARED: "a session was shared with the team",
}

# Where secrets sit is for the session's owner alone (the findings list is theirs): a team hook never
# hears of them, only a personal hook of the owner.
PERSONAL_ONLY = frozenset({SECRET_FOUND})


class InvalidEvents(ValueError):
    """A hook's event list names an event that does not exist, or none."""


def check_events(value: object) -> list[str]:
    """Return the chosen events in the order of ``EVENTS``; refuse unknown ones and an empty choice."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidEvents("events must be a list of event names.")
    unknown = sorted(set(value) - set(EVENTS))
    if unknown:
        raise InvalidEvents(f"Unknown events: {', '.join(unknown)}; known: {', '.join(EVENTS)}.")
    if not value:
        raise InvalidEvents("Choose at least one event.")
    return [e for e in EVENTS if e in value]
