"""The action log's verbs for the model providers staff configure."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("providers")
class Action(StrEnum):
    PROVIDER_CREATE = "provider_create"
    PROVIDER_CHANGE = "provider_change"
    PROVIDER_DELETE = "provider_delete"
