"""The action log's verbs for organizing sessions (each at most 16 characters, the column's width)."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("organize")
class Action(StrEnum):
    PIN = "pin"
    UNPIN = "unpin"
    TAG_CREATE = "tag_create"
    TAG_CHANGE = "tag_change"
    TAG_DELETE = "tag_delete"
    TAG_APPLY = "tag_apply"
    TAG_REMOVE = "tag_remove"
    ARCHIVE = "archive"
    RESTORE = "restore"
    FILTER_SAVE = "filter_save"
    FILTER_DELETE = "filter_delete"
