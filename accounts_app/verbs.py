"""The action log's verbs for API tokens."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("accounts_app")
class Action(StrEnum):
    TOKEN_CREATE = "token_create"
    TOKEN_REVOKE = "token_revoke"
