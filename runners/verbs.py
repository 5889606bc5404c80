"""The action log's verbs for runners (each at most 16 characters, the column's width)."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("runners")
class Action(StrEnum):
    RUNNER_CREATE = "runner_create"
    RUNNER_REVOKE = "runner_revoke"
    RUNNER_CONNECT = "runner_online"
    RUNNER_DISCONNECT = "runner_offline"
    DISPATCH = "runner_dispatch"
    STEER = "runner_steer"
    FOLLOW_UP = "runner_follow_up"
    HANDOFF = "handoff"
