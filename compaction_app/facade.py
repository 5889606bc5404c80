"""What other apps may use of ``compaction_app``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from compaction_app.domain.overflow import is_context_overflow, is_recoverable_length, is_transient_error
from compaction_app.domain.settings import CompactionSettings, should_compact
from compaction_app.models import CompactionRun
from compaction_app.services import compact_session, compaction_settings, default_summarizer
from compaction_app.summarizers import LLMSummarizer, Summarizer

__all__ = [
    "CompactionRun",
    "CompactionSettings",
    "LLMSummarizer",
    "Summarizer",
    "compact_session",
    "compaction_settings",
    "default_summarizer",
    "is_context_overflow",
    "is_recoverable_length",
    "is_transient_error",
    "should_compact",
]
