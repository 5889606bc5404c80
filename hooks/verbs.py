"""The action log's verbs for hooks (each at most 16 characters, the column's width)."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("hooks")
class Action(StrEnum):
    HOOK_CREATE = "hook_create"
    HOOK_CHANGE = "hook_change"
    HOOK_ROTATE = "hook_rotate"
    HOOK_DELETE = "hook_delete"
    HOOK_PING = "hook_ping"
    HOOK_REPLAY = "hook_replay"
