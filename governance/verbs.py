"""The action log's verbs for governance: redactions, legal holds and rules."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("governance")
class Action(StrEnum):
    REDACT = "redact"
    HOLD = "hold"
    UNHOLD = "unhold"
    POLICY = "policy"
