"""The action log's verbs for compactions and branch summaries."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("compaction_app")
class Action(StrEnum):
    # A compaction is logged when requested (COMPACT), refused before any work, and when it ends.
    COMPACT = "compact"
    COMPACT_REFUSED = "compact_refused"
    COMPACTED = "compacted"
    COMPACT_FAILED = "compact_failed"
    BRANCH_SUMMARY = "branch_summary"
    CANCEL = "cancel"
