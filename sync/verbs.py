"""The action log's verb for sync: a push from a Pi user's machine."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("sync")
class Action(StrEnum):
    SYNC = "sync"
