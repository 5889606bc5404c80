"""The action log's verbs for team activity."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("activity")
class Action(StrEnum):
    DIGEST_CHOICE = "digest_choice"
    DIGEST_SEND = "digest_send"
