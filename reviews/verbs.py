"""The action log's verbs for reviews."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("reviews")
class Action(StrEnum):
    REVIEW_REQUEST = "review_request"
    REVIEW_DECIDE = "review_decide"
    REVIEW_WITHDRAW = "review_withdraw"
