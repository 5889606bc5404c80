"""The action log's verbs for sessions: what their owners, editors and link holders did."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("sessions_app")
class Action(StrEnum):
    IMPORT = "import"
    EXPORT = "export"
    NAVIGATE = "navigate"
    FORK = "fork"
    CLONE = "clone"
    SHARE = "share"
    REVOKE = "revoke"
    LABEL = "label"
    APPEND = "append"
    RENAME = "rename"
    DELETE = "delete"
    SETTINGS = "settings"
    CREATE = "create"
    PURGE = "purge"
