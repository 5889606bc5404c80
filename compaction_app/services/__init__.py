"""Compaction and branch-summary use cases, each recorded as a ``CompactionRun`` (its history row).

- ``compaction``: request a manual compaction (queued) or compact now (runs, tasks);
- ``branch_summary``: navigate with a summary of the branch being left (queued, then summarized);
- ``operations``: the run bookkeeping both share, the summarizer choice and cancelling.
"""

from __future__ import annotations

from compaction_app.services.branch_summary import (
    BUSY_NAVIGATING,
    SESSION_CHANGED_NAVIGATING,
    BranchSummaryOutcome,
    start_branch_summary,
    summarize_and_navigate,
)
from compaction_app.services.compaction import (
    BUSY_COMPACTING,
    SESSION_CHANGED,
    CompactionOutcome,
    CompactionRefused,
    check_compaction,
    compact_session,
    compaction_settings,
    request_compaction,
)
from compaction_app.services.operations import (
    EXPIRED,
    INTERRUPTED,
    OperationFinished,
    OperationInProgress,
    cancel_operation,
    default_summarizer,
    expire_stale_operations,
    fail_run,
    summarizer_for,
)

__all__ = [
    "BUSY_COMPACTING",
    "BUSY_NAVIGATING",
    "EXPIRED",
    "INTERRUPTED",
    "SESSION_CHANGED",
    "SESSION_CHANGED_NAVIGATING",
    "BranchSummaryOutcome",
    "CompactionOutcome",
    "CompactionRefused",
    "OperationFinished",
    "OperationInProgress",
    "cancel_operation",
    "check_compaction",
    "compact_session",
    "compaction_settings",
    "default_summarizer",
    "expire_stale_operations",
    "fail_run",
    "request_compaction",
    "start_branch_summary",
    "summarize_and_navigate",
    "summarizer_for",
]
