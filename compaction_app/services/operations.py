"""Bookkeeping shared by compactions and branch summaries: each is a ``CompactionRun`` row.

A run reads and plans, calls the summarizer with no transaction open, then writes in one short
transaction that locks the run, then the session, and re-checks the leaf it planned for. The run's
status changes in that same transaction, so a task delivered twice, or delivered again after its
worker died, writes at most one entry. Events go out only after commit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from actionlog.facade import record_action
from compaction_app.domain.summary import Summarizer, SummaryRequest, SummaryResponse
from compaction_app.models import CompactionRun
from compaction_app.summarizers import LLMSummarizer, OfflineSummarizer
from compaction_app.verbs import Action
from core import realtime
from core import tasks as background
from core.actors import COMPACTION_WORKER, Actor, actor_name, user_of
from pitree.operations import TreeOperationError
from providers.facade import LLMProvider
from sessions_app.facade import ChatSession, access

__all__ = [
    "EXPIRED",
    "INTERRUPTED",
    "OperationFinished",
    "OperationInProgress",
    "Reason",
    "Status",
    "cancel_operation",
    "default_summarizer",
    "expire_stale_operations",
    "fail_run",
    "summarizer_for",
]

log = logging.getLogger(__name__)

Status = CompactionRun.Status
Reason = CompactionRun.Reason


EXPIRED = "The operation did not finish in time and was given up; request it again."
INTERRUPTED = "The operation was interrupted (the database did not answer); request it again."


class OperationInProgress(TreeOperationError):
    """Another compaction or branch summary of the session is queued or running."""


class OperationFinished(Exception):
    """The operation already ended and can no longer be cancelled."""


# -- summarizers ----------------------------------------------------------------------------------------


def summarizer_for(
    session: ChatSession, *, thinking_level: Any = None, model: Mapping[str, Any] | None = None
) -> Summarizer:
    """Return the summarizer for a session: the setting's factory, the session's model, the default
    provider, or the offline one.

    ``PIWEB_SUMMARIZER`` names a callable taking the session; it is where a deployment substitutes its
    own summaries (Pi's ``session_before_compact`` extension point). Otherwise the session's model where
    the summary starts (``model``: its ``provider`` and ``modelId``) writes it, as Pi's does, when a
    provider record serves that model (the default summarizer first if it is one of them); a model no
    record serves falls back to the default summarizer. ``thinking_level`` is the session's there too:
    a reasoning model summarizes at it.
    """
    provider = None if settings.PIWEB_SUMMARIZER else _session_model_provider(model)
    if provider is None:
        return default_summarizer(session, thinking_level=thinking_level)
    level = thinking_level if isinstance(thinking_level, str) else None
    return LLMSummarizer(config=provider.config(), thinking_level=level)


def default_summarizer(session: ChatSession, *, thinking_level: Any = None) -> Summarizer:
    """The summarizer when the session's model is not asked: the ``PIWEB_SUMMARIZER`` factory, the
    default summarizer provider at ``thinking_level``, or the offline one."""
    factory = settings.PIWEB_SUMMARIZER
    if factory:
        return import_string(factory)(session)
    provider = LLMProvider.objects.filter(is_summarizer_default=True).first()
    if provider is not None:
        level = thinking_level if isinstance(thinking_level, str) else None
        return LLMSummarizer(config=provider.config(), thinking_level=level)
    return OfflineSummarizer()


def _session_model_provider(model: Mapping[str, Any] | None) -> LLMProvider | None:
    name = model.get("provider") if model else None
    model_id = model.get("modelId") if model else None
    if not isinstance(name, str) or not isinstance(model_id, str):
        return None
    records = LLMProvider.objects.filter(provider=name, model_id=model_id)
    return records.order_by("-is_summarizer_default", "pk").first()


@dataclass(slots=True)
class Recorder:
    """Pass requests through, remembering which model answered."""

    inner: Summarizer
    models: list[str] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        response = self.inner.summarize(request)
        model = response.get("model")
        if isinstance(model, str) and model not in self.models:
            self.models.append(model)
        return response

    @property
    def name(self) -> str:
        return type(self.inner).__name__


def context_window(summarizer: Summarizer) -> int | None:
    config = getattr(summarizer, "config", None)
    return getattr(config, "context_window", None)


def cost(usage: Mapping[str, Any] | None) -> float | None:
    spent = usage.get("cost") if isinstance(usage, Mapping) else None
    total = spent.get("total") if isinstance(spent, Mapping) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None


# -- run bookkeeping ------------------------------------------------------------------------------------


def event_prefix(reason: str) -> str:
    if reason == Reason.OVERFLOW:
        return "Context overflow recovery failed: "
    if reason == Reason.THRESHOLD:
        return "Auto-compaction failed: "
    return "Compaction failed: "


def _events(run: CompactionRun) -> tuple[str, str]:
    if run.kind == CompactionRun.Kind.COMPACTION:
        return "compaction_start", "compaction_end"
    return "branch_summary_start", "branch_summary_end"


def begin(run: CompactionRun) -> bool:
    """Mark the run running; return False if it already finished. Announces the start only once."""
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            copy_run(locked, run)
            return False
        first = locked.status == Status.QUEUED
        locked.status = Status.RUNNING
        locked.attempts += 1
        locked.started_at = locked.started_at or timezone.now()
        locked.save(update_fields=["status", "attempts", "started_at"])
        if first:
            start, _ = _events(locked)
            transaction.on_commit(
                partial(
                    realtime.broadcast,
                    locked.session_id,
                    start,
                    operationId=str(locked.operation_id),
                    reason=locked.reason,
                )
            )
        copy_run(locked, run)
    return True


def copy_run(source: CompactionRun, target: CompactionRun) -> None:
    """Bring the caller's instance up to date with the locked row."""
    if source is not target:
        for column in CompactionRun._meta.concrete_fields:
            setattr(target, column.attname, getattr(source, column.attname))


def finish(run: CompactionRun, status: str, **fields: Any) -> None:
    """Set the run's final state on the locked row; the caller holds the transaction."""
    run.status = status
    run.finished_at = timezone.now()
    if run.started_at is not None:
        run.duration_ms = int((run.finished_at - run.started_at).total_seconds() * 1000)
    for key, value in fields.items():
        setattr(run, key, value)
    run.save()


def fail_run(run: CompactionRun, error: str, *, actor: Actor, aborted: bool = False) -> CompactionRun:
    """Record a failure (or a cancellation) unless the run already ended, and announce it after commit.

    The end is logged with ``actor`` (the worker, or whoever could not queue it).
    """
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if not locked.is_finished:
            message = (
                None
                if aborted
                else (event_prefix(locked.reason) + error if locked.kind == "compaction" else error)
            )
            finish(locked, Status.CANCELLED if aborted else Status.FAILED, error=message or "")
            log_end(actor, locked)
            transaction.on_commit(partial(announce_end, locked))
        copy_run(locked, run)
    return run


def log_end(actor: Actor, run: CompactionRun) -> None:
    """Log how a run ended, in the transaction that ended it."""
    if run.kind == CompactionRun.Kind.COMPACTION:
        action = Action.COMPACTED if run.status == Status.SUCCEEDED else Action.COMPACT_FAILED
    else:
        action = Action.BRANCH_SUMMARY
    record_action(
        actor=actor,
        action=action,
        session=run.session,
        operation=str(run.operation_id),
        reason=run.reason,
        status=run.status,
        **_error_of(run),
    )


def announce_end(run: CompactionRun) -> None:
    _, end = _events(run)
    fields: dict[str, Any] = {"operationId": str(run.operation_id), "reason": run.reason}
    if run.kind == CompactionRun.Kind.COMPACTION:
        fields["aborted"] = run.status == Status.CANCELLED
        fields["willRetry"] = run.will_retry if run.status == Status.SUCCEEDED else False
        if run.status == Status.SUCCEEDED:
            fields["result"] = {
                "summary": run.summary,
                "firstKeptEntryId": run.first_kept_entry_id,
                "tokensBefore": run.tokens_before,
                "estimatedTokensAfter": run.tokens_after,
                "usage": run.usage,
                "entryId": run.result_entry_id,
            }
        elif run.status == Status.FAILED:
            fields["errorMessage"] = run.error
    else:
        fields.update(
            status=run.status,
            oldLeafId=run.planned_leaf,
            newLeafId=run.result_leaf_id,
            summaryEntryId=run.result_entry_id,
        )
        if run.status == Status.FAILED:
            fields["errorMessage"] = run.error
    realtime.broadcast(run.session_id, end, **fields)


def enqueue(task_name: str, run_pk: int) -> None:
    """Send the run's task to the broker; a broker failure fails the run instead of leaving it queued."""
    try:
        background.enqueue(
            f"compaction_app.tasks.{task_name}", run_pk, queue=settings.PIWEB_COMPACTION_QUEUE or None
        )
    except Exception:
        log.exception("could not queue %s for run %s", task_name, run_pk)
        fail_run(
            CompactionRun.objects.get(pk=run_pk), "The operation could not be queued", actor=COMPACTION_WORKER
        )


def create_run(
    *, session: ChatSession, kind: str, reason: str, requested_by: Any, key: str | None, **fields: Any
) -> CompactionRun:
    user = user_of(requested_by) if requested_by is not None else None
    return CompactionRun.objects.create(
        idempotency_key=key or f"{kind}:{uuid.uuid4()}",
        kind=kind,
        session=session,
        requested_by=user,
        reason=reason,
        **fields,
    )


def scoped_key(kind: str, session: ChatSession, requested_by: Actor, key: str | None) -> str | None:
    if not key:
        return None
    user = user_of(requested_by)
    who = user.pk if user is not None else actor_name(requested_by) or "-"
    return f"{kind}:{session.pk}:{who}:{key}"[:255]


def existing_run(key: str | None) -> CompactionRun | None:
    return CompactionRun.objects.filter(idempotency_key=key).first() if key else None


def expire_stale_operations(*, session: ChatSession | None = None) -> int:
    """Fail the operations queued or running for longer than ``PIWEB_OPERATION_TIMEOUT``; return how many.

    Such a run lost its task (a broker that restarted empty) or its worker's write (a database that
    failed when retries were spent): nothing will end it, and it would refuse every later operation of
    its session. Its task, should it still come, finds it ended and writes nothing.
    """
    bound = timezone.now() - timedelta(seconds=settings.PIWEB_OPERATION_TIMEOUT)
    stale = CompactionRun.objects.filter(
        Q(status=Status.RUNNING, started_at__lt=bound) | Q(status=Status.QUEUED, created_at__lt=bound)
    )
    if session is not None:
        stale = stale.filter(session=session)
    expired = 0
    for run in stale.select_related("session"):
        if fail_run(run, EXPIRED, actor=COMPACTION_WORKER).error.endswith(EXPIRED):
            expired += 1
    return expired


def lock_idle_session(session: ChatSession, busy: str) -> ChatSession:
    """Lock the session row and refuse if another operation on it is active. Caller holds a transaction.

    Stale operations are ended first (their rows, then the session: the order a worker's write locks in).
    """
    expire_stale_operations(session=session)
    locked = ChatSession.objects.select_for_update().get(pk=session.pk)
    if CompactionRun.objects.filter(session=locked).active().exists():
        raise OperationInProgress(busy)
    return locked


# -- cancel ---------------------------------------------------------------------------------------------


def cancel_operation(*, run: CompactionRun, actor: Actor) -> CompactionRun:
    """Cancel a queued or running operation; its task sees the status before writing and writes nothing."""
    access.authorize(actor, run.session, access.WRITE)
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            raise OperationFinished(f"Operation already {locked.status}")
        finish(locked, Status.CANCELLED, error="")
        record_action(
            actor=actor, action=Action.CANCEL, session=run.session, operation=str(locked.operation_id)
        )
        transaction.on_commit(partial(announce_end, locked))
    return locked


def _error_of(run: CompactionRun) -> dict[str, Any]:
    return {"error": run.error} if run.error else {}
