"""The run's side of compaction: resolve settings for the run's model and call the compaction service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings

from compaction_app.facade import (
    CompactionSettings,
    LLMSummarizer,
    Summarizer,
    compact_session,
    compaction_settings,
    default_summarizer,
)
from core.actors import RUN_WORKER

if TYPE_CHECKING:
    from agent.loop import RunLoop

__all__ = ["MOVED", "Compacted", "compact", "settings_for"]

MOVED = "The session moved to another branch while the run was in progress; nothing was compacted."


@dataclass(frozen=True, slots=True)
class Compacted:
    success: bool
    reference: str | None  # the compaction entry id, else the compaction operation id
    error_message: str | None


def settings_for(provider: str, model_id: str, session: Any = None) -> CompactionSettings:
    """Return the compaction settings with the model's and the session's overrides applied."""
    settings: CompactionSettings = compaction_settings(provider, model_id, session)
    return settings


def run_summarizer(loop: RunLoop) -> Summarizer:
    """The run's own model writes the summaries inside a run, as in Pi.

    A deployment's ``PIWEB_SUMMARIZER`` hook, or ``PIWEB_RUN_SUMMARIZER`` set to ``default``, hands them
    to the default summarizer instead (the hook, else the default summarizer provider, else the offline
    one).
    """
    if django_settings.PIWEB_SUMMARIZER or django_settings.PIWEB_RUN_SUMMARIZER == "default":
        return default_summarizer(loop.session, thinking_level=loop.thinking_level())
    retry = loop.retry
    return LLMSummarizer(
        config=loop.config,
        thinking_level=loop.thinking_level(),
        timeout=float(django_settings.PIWEB_LLM_TIMEOUT),
        attempts=(retry.max_retries + 1) if retry.enabled else 1,
        base_delay=retry.base_delay_ms / 1000,
        sleep=loop.sleep,
    )


def compact(loop: RunLoop, *, reason: str, will_retry: bool) -> Compacted:
    """Compact the run's branch now; the service announces compaction_start/compaction_end itself."""
    session = loop.session
    session.refresh_from_db()
    if session.leaf_entry_id != loop.leaf:
        # The service compacts the session's leaf; another branch must not be compacted for this run.
        return Compacted(False, None, MOVED)
    outcome: Any = compact_session(
        session=session,
        reason=reason,
        will_retry=will_retry,
        actor=RUN_WORKER,
        requested_by=loop.run.requested_by,
        summarizer=run_summarizer(loop),
    )
    if outcome.status == "succeeded" and outcome.entry_id:
        loop.leaf = outcome.entry_id
        return Compacted(True, outcome.entry_id, None)
    if outcome.status == "skipped":
        message = f"Context overflow recovery failed: {outcome.error or 'nothing to compact'}"
        return Compacted(False, None, message if reason == "overflow" else None)
    return Compacted(False, outcome.operation_id or None, outcome.error_message or outcome.error)
