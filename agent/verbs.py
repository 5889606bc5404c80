"""The action log's verbs for agent runs."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("agent")
class Action(StrEnum):
    RUN = "run"
    ABORT = "abort"
