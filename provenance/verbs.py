"""The action log's verbs for provenance (each at most 16 characters, the column's width)."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("provenance")
class Action(StrEnum):
    RUN_COMMITS = "run_commits"
