"""The action log's verbs for discussion."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("discussion")
class Action(StrEnum):
    COMMENT_CREATE = "comment_create"
    COMMENT_EDIT = "comment_edit"
    COMMENT_DELETE = "comment_delete"
    COMMENT_RESOLVE = "comment_resolve"
    COMMENT_REOPEN = "comment_reopen"
